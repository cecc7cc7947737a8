#!/usr/bin/env python3
"""Issue 12's benchmark figures from one gpu/apps.sh run: the corpus's wall times as ratios
(ivcuda / native) and the PyTorch scripts' `time:` lines as throughput ratios (native time /
ivcuda time), against the goals (training step >= 0.90, batch-1 inference >= 0.80).

    gpu/apps_benchmarks.py RUNS_DIR [HEADER_LINE]   # RUNS_DIR: runs/ from the run's logs.tar.xz

Only runs that exited 0 in both modes count. Prints Markdown; nothing is estimated."""

import os
import statistics
import sys

GOALS = {"train_step": 0.90, "forward_batch1": 0.80}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def ok(run_dir, mode):
    return read(os.path.join(run_dir, mode + ".rc")) == "0"


def timings(path):
    found = {}
    for line in (read(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "time:":
            found[parts[1]] = float(parts[2])
    return found


def main():
    runs = sys.argv[1]
    print(sys.argv[2] if len(sys.argv) > 2 else "# Corpus and PyTorch: ivcuda against native")
    corpus, torch_rows = [], []
    for name in sorted(os.listdir(runs)):
        d = os.path.join(runs, name)
        if not (ok(d, "native") and ok(d, "ivcuda")):
            continue
        if name.startswith("torch."):
            native, ivcuda = timings(os.path.join(d, "native.out")), timings(os.path.join(d, "ivcuda.out"))
            for key in native:
                if key in ivcuda and key != "total" and ivcuda[key] > 0:
                    torch_rows.append((name[6:], key, native[key], ivcuda[key], native[key] / ivcuda[key]))
        else:
            n, i = read(os.path.join(d, "native.wall")), read(os.path.join(d, "ivcuda.wall"))
            if n and i and float(n) > 0:
                corpus.append((name, float(n), float(i), float(i) / float(n)))
    print("\n## PyTorch (throughput: native time / ivcuda time)\n")
    print("| script | timing | native | ivcuda | throughput ratio | goal |")
    print("|---|---|---|---|---|---|")
    for script, key, n, i, r in torch_rows:
        goal = GOALS.get(key)
        met = "" if goal is None else (f"≥ {goal:.2f}: " + ("met" if r >= goal else "**missed**"))
        print(f"| {script} | {key} | {n * 1e3:.3f} ms | {i * 1e3:.3f} ms | {r:.2f} | {met} |")
    if not torch_rows:
        print("| (no script with timings ran in both modes) | | | | | |")
    print("\n## Corpus wall times (whole process: start, CUDA initialisation, work, exit)\n")
    if corpus:
        ratios = [c[3] for c in corpus]
        print(f"{len(corpus)} programs that exited 0 both ways; ivcuda / native wall time: median "
              f"{statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}.\n")
    print("| program | native | ivcuda | ivcuda / native |")
    print("|---|---|---|---|")
    for name, n, i, r in corpus:
        print(f"| {name} | {n:.2f} s | {i:.2f} s | {r:.2f} |")


if __name__ == "__main__":
    main()
