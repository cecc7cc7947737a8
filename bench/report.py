#!/usr/bin/env python3
"""Turns the benchmark programs' JSON lines (native and ivcuda) into bench.md,
bench.json and PNG plots. Usage:

    report.py <results-dir> <date> <gpu> <commit>

reads <results-dir>/native.jsonl and <results-dir>/ivcuda.jsonl (either may be
missing or partial: the report says what has no data) and writes next to them.
"""
import json
import os
import statistics
import sys

GOAL_ROUNDTRIP_US = 2.0
GOAL_SLEEP_OVERHEAD_US = 10.0
GOAL_LAUNCH_RATIO = 0.70
GOAL_BANDWIDTH_RATIO = 0.95
GOAL_BANDWIDTH_BYTES = 64 << 20


def load(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def pick(rows, bench, **keys):
    for r in rows:
        if r.get("bench") == bench and all(r.get(k) == v for k, v in keys.items()):
            return r
    return None


def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"


def value(row, field):
    return None if row is None or field not in row else row[field]


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}"
    return f"{n} B"


def main():
    results, date, gpu, commit = sys.argv[1:5]
    native = load(os.path.join(results, "native.jsonl"))
    ivcuda = load(os.path.join(results, "ivcuda.jsonl"))
    goals = []  # (measure, unit, native, ivcuda, ratio, goal text, met)

    def add(measure, unit, n, i, goal, met, digits=2):
        ratio = i / n if n not in (None, 0) and i is not None else None
        goals.append({"measure": measure, "unit": unit, "native": n, "ivcuda": i, "ratio": ratio,
                      "goal": goal, "met": met, "digits": digits})

    for call in ("cuStreamQuery", "cuCtxSynchronize"):
        for stat in ("p50_us", "p99_us"):
            n = value(pick(native, "roundtrip", call=call), stat)
            i = value(pick(ivcuda, "roundtrip", call=call), stat)
            if stat == "p50_us":
                met = None if n is None or i is None else (i - n) <= GOAL_ROUNDTRIP_US
                add(f"round trip {call} p50", "µs", n, i, f"≤ native + {GOAL_ROUNDTRIP_US:g} µs", met, 3)
            else:
                add(f"round trip {call} p99", "µs", n, i, "—", "info", 3)
    n = value(pick(native, "roundtrip", call="cuDeviceGetAttribute"), "p50_us")
    i = value(pick(ivcuda, "roundtrip", call="cuDeviceGetAttribute"), "p50_us")
    add("cuDeviceGetAttribute p50 (cached in the guest)", "µs", n, i, "—", "info", 3)

    sleep_rows = []
    for us in range(0, 101, 5):
        n = value(pick(native, "sleep", sleep_us=us), "p50_us")
        i = value(pick(ivcuda, "sleep", sleep_us=us), "p50_us")
        sleep_rows.append({"sleep_us": us, "native_p50_us": n, "ivcuda_p50_us": i,
                           "overhead_us": None if n is None or i is None else i - n})
    overheads = [r["overhead_us"] for r in sleep_rows if r["overhead_us"] is not None]
    median_overhead = statistics.median(overheads) if overheads else None
    add("sleep kernel: overhead per task (median over 0–100 µs)", "µs", 0.0 if overheads else None,
        median_overhead, f"≤ {GOAL_SLEEP_OVERHEAD_US:g} µs",
        None if median_overhead is None else median_overhead <= GOAL_SLEEP_OVERHEAD_US, 2)
    add("sleep kernel: worst overhead per task", "µs", 0.0 if overheads else None,
        max(overheads) if overheads else None, "—", "info", 2)
    for us in (0, 50, 100):
        r = sleep_rows[us // 5]
        add(f"sleep kernel {us} µs: time per task p50", "µs", r["native_p50_us"], r["ivcuda_p50_us"], "—", "info", 2)

    n = value(pick(native, "launch_rate"), "launches_per_s")
    i = value(pick(ivcuda, "launch_rate"), "launches_per_s")
    add("async launch rate, empty kernel", "launches/s", n, i, f"≥ {GOAL_LAUNCH_RATIO:.0%} of native",
        None if not n or i is None else i / n >= GOAL_LAUNCH_RATIO, 0)

    bandwidth_rows = []
    for memory in ("pageable", "pinned"):
        for direction in ("htod", "dtoh"):
            size = 4096
            while size <= 256 << 20:
                nr = pick(native, "bandwidth", memory=memory, direction=direction, bytes=size)
                ir = pick(ivcuda, "bandwidth", memory=memory, direction=direction, bytes=size)
                bandwidth_rows.append({"memory": memory, "direction": direction, "bytes": size,
                                       "native_gb_per_s": value(nr, "gb_per_s"),
                                       "ivcuda_gb_per_s": value(ir, "gb_per_s"),
                                       "ivcuda_error": value(ir, "error")})
                if size == GOAL_BANDWIDTH_BYTES:
                    n, i = value(nr, "gb_per_s"), value(ir, "gb_per_s")
                    add(f"{human_bytes(size)} copy {memory} {direction}", "GB/s", n, i,
                        f"≥ {GOAL_BANDWIDTH_RATIO:.0%} of native",
                        None if not n or i is None else i / n >= GOAL_BANDWIDTH_RATIO, 2)
                size *= 4

    n = value(pick(native, "matmul_e2e"), "median_ms")
    i = value(pick(ivcuda, "matmul_e2e"), "median_ms")
    add("matmul 4096² end to end (upload, compute, download)", "ms", n, i, "—", "info", 2)

    def met_text(m):
        return {True: "yes", False: "**no**", None: "no data", "info": "—"}[m]

    lines = ["# ivcuda benchmarks", "", "| | |", "|---|---|", f"| date | {date} |", f"| GPU, driver | {gpu} |",
             f"| commit | {commit} |", ""] + ([f"**{os.environ['BENCH_NOTE']}**", ""] if os.environ.get("BENCH_NOTE") else []) + [
             "Native = the same binary on NVIDIA's libcuda.so.1; ivcuda = through the guest library and "
             "cuda-server over a /dev/shm region on the same host (no VM).", "",
             "| measure | unit | native | ivcuda | ivcuda/native | goal | met? |", "|---|---|---|---|---|---|---|"]
    for g in goals:
        lines.append(f"| {g['measure']} | {g['unit']} | {fmt(g['native'], g['digits'])} | "
                     f"{fmt(g['ivcuda'], g['digits'])} | {fmt(g['ratio'], 3)} | {g['goal']} | {met_text(g['met'])} |")
    lines += ["", "## Sleep kernel, time per task (p50)", "", "| sleep µs | native µs | ivcuda µs | overhead µs |",
              "|---|---|---|---|"]
    for r in sleep_rows:
        lines.append(f"| {r['sleep_us']} | {fmt(r['native_p50_us'])} | {fmt(r['ivcuda_p50_us'])} | "
                     f"{fmt(r['overhead_us'])} |")
    lines += ["", "## Copy bandwidth (GB/s)", "", "| memory | direction | size | native | ivcuda | ratio |",
              "|---|---|---|---|---|---|"]
    for r in bandwidth_rows:
        n, i = r["native_gb_per_s"], r["ivcuda_gb_per_s"]
        ivcuda_text = fmt(i) if r["ivcuda_error"] is None else f"n/a ({r['ivcuda_error']})"
        lines.append(f"| {r['memory']} | {r['direction']} | {human_bytes(r['bytes'])} | {fmt(n)} | {ivcuda_text} | "
                     f"{fmt(i / n if n and i is not None else None, 3)} |")

    runs_path = os.path.join(results, "bench-runs.tsv")
    runs = []
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 5:
                    runs.append({"mode": parts[0], "program": parts[1], "rc": parts[2], "wall_s": parts[3],
                                 "note": parts[4]})
    if runs:
        lines += ["", "## Runs", "", "| mode | program | exit | wall s | note |", "|---|---|---|---|---|"]
        for r in runs:
            lines.append(f"| {r['mode']} | {r['program']} | {r['rc']} | {r['wall_s']} | {r['note']} |")

    plots = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        xs = [r["sleep_us"] for r in sleep_rows]
        for key, label in (("native_p50_us", "native"), ("ivcuda_p50_us", "ivcuda")):
            pts = [(x, r[key]) for x, r in zip(xs, sleep_rows) if r[key] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xlabel("kernel sleep (µs)")
        ax.set_ylabel("time per task, p50 (µs)")
        ax.set_title("launch + synchronise per task")
        ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(results, "sleep.png"), dpi=120)
        plots.append("sleep.png")

        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, memory in zip(axes, ("pageable", "pinned")):
            for direction in ("htod", "dtoh"):
                for key, style in (("native_gb_per_s", "-"), ("ivcuda_gb_per_s", "--")):
                    pts = [(r["bytes"], r[key]) for r in bandwidth_rows
                           if r["memory"] == memory and r["direction"] == direction and r[key] is not None]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                                label=f"{key.split('_')[0]} {direction}")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bytes per copy")
            ax.set_title(memory)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend()
        axes[0].set_ylabel("GB/s")
        fig.tight_layout()
        fig.savefig(os.path.join(results, "bandwidth.png"), dpi=120)
        plots.append("bandwidth.png")
    except Exception as e:  # matplotlib missing or broken: the tables carry everything
        lines += ["", f"Plots skipped: {type(e).__name__}: {e}"]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]

    with open(os.path.join(results, "bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(results, "bench.json"), "w") as f:
        json.dump({"date": date, "gpu": gpu, "commit": commit,
                   "goals": [{k: v for k, v in g.items() if k != "digits"} for g in goals],
                   "sleep": sleep_rows, "bandwidth": bandwidth_rows, "runs": runs,
                   "raw": {"native": native, "ivcuda": ivcuda}}, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
