#!/usr/bin/env python3
"""integrity-report.md from gpu/integrity-probe.sh's work directory: the outcome of every
experiment, grouped by the question it answers, and the probe's answers compared run with run.
Writes only what was measured; where an experiment did not run the cell says so."""
import argparse
import glob
import os
import re
from collections import OrderedDict, defaultdict

TABLES = OrderedDict([
    ("f8cff951", "asked first by cudart 13"),
    ("6bd5fb6c", "CUDART interface"),
    ("a094798c", "runtime callback hooks"),
    ("42d85a81", "tools TLS"),
    ("c693336e", "context-local storage"),
    ("263e8860", "context checks"),
    ("d4082055", "integrity check"),
])

A_ROWS = [
    ("native", "NVIDIA's libcuda.so.1, no shim"),
    ("real", "the shim, every table the driver's own"),
    ("deep", "copies, code words logging stubs (cuda-trace's default)"),
    ("shallow", "copies of the words as they are (new addresses, same function pointers)"),
    ("inplace", "the driver's tables at their addresses, code words replaced by the shim's stubs"),
    ("anon", "the same, through trampolines in anonymous memory (outside every loaded object)"),
    ("refuse-f8cff951", "the driver's tables, f8cff951 refused (CUDA_ERROR_NOT_FOUND, as ivcuda does)"),
]
M_ROWS = [
    ("remote-own-tables", "the driver's own tables; the integrity slot answered by the helper process"),
    ("remote-deep", "copies with stubs; integrity answered by the helper (ivcuda today)"),
    ("mirror", "every table at the helper's address, words: this process's stubs; integrity by the helper"),
    ("mirror-exact", "every table at the helper's address with the helper's words (trampolines at its "
                     "function addresses); integrity by the helper"),
    ("mirror-slot3", "mirror, and context checks slot 3 replayed in the helper"),
    ("mirror-exact-slot3", "mirror-exact, and slot 3 replayed in the helper"),
    ("mirror-refuse-f8cff951", "mirror, f8cff951 refused"),
    ("mirror-needed", "only the tables whose lone copy failed (A) at the helper's addresses, the rest copies"),
    ("mirror-other-helper", "tables at helper B's addresses, integrity answered by helper A (control)"),
]


def read_results(work):
    rows = OrderedDict()
    path = os.path.join(work, "results.tsv")
    if not os.path.exists(path):
        return rows
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 7:
            continue
        rows[f[0]] = {"prog": f[1], "spec": f[2], "extra": f[3], "rc": f[4], "verdict": f[5], "wall": f[6]}
    # a run repeated after a mirror collision: the repetition stands for it
    for name in list(rows):
        m = re.match(r"^([^.]+)\.retry\d+\.(.*)$", name)
        if m:
            base = m.group(1) + "." + m.group(2)
            if base not in rows or rows[base]["verdict"].startswith("void"):
                rows[base] = dict(rows[name], verdict=rows[name]["verdict"] + " (retried)")
    return rows


def slot_runs(rows):
    """The slot-by-slot runs, in table order, then slot order."""
    found = []
    for n in rows:
        m = re.search(r"\.only-(inplace|anon)-([0-9a-f]{8})@(\d+)$", n)
        if m:
            order = list(TABLES).index(m.group(2)) if m.group(2) in TABLES else 99
            found.append((m.group(1), order, int(m.group(3)), n))
    return [n for _, _, _, n in sorted(found)]


def cell(rows, name):
    r = rows.get(name)
    if r is None:
        return "not run"
    v = r["verdict"].replace("|", "/")
    return v if v != "pass" else "**pass**"


def programs(rows):
    seen = []
    for r in rows.values():
        if r["prog"] not in seen:
            seen.append(r["prog"])
    return seen


def read_probe(work):
    runs = OrderedDict()
    for path in sorted(glob.glob(os.path.join(work, "probe", "*.out"))):
        name = os.path.basename(path)[:-4]
        info = {"answers": [], "libcuda": None, "aslr": None, "lines": []}
        for line in open(path, encoding="utf-8", errors="replace"):
            line = line.rstrip("\n")
            info["lines"].append(line)
            m = re.match(r"answer step=(\S+) v=(\d+) ts=(\d+) rc=(\S+) out=(\S+) overrun=(\d+)", line)
            if m:
                info["answers"].append({"step": m.group(1), "v": int(m.group(2)), "ts": int(m.group(3)),
                                        "rc": m.group(4), "out": m.group(5), "overrun": int(m.group(6))})
            m = re.match(r"loaded path=\S+ libcuda=(\S+)", line)
            if m:
                info["libcuda"] = m.group(1)
            m = re.match(r"probe pid=\d+ aslr=(\S+)", line)
            if m:
                info["aslr"] = m.group(1)
        runs[name] = info
    return runs


def last_ask(info, v):
    """The output of the last call of version v in the run's last `ask` step."""
    found = [a for a in info["answers"] if a["v"] == v]
    return found[-1] if found else None


def probe_section(runs, out):
    if not runs:
        out.append("No probe output.\n")
        return
    out.append("Every `ask` calls slot 1 with each version and the fixed time of the run. "
               "`overrun`: bytes past the 16th the driver wrote (in a 64-byte buffer).\n")
    # one process, several ways of calling
    same = runs.get("same")
    if same:
        out.append("**One process** (`same`: ask, ask again, from call site B, into heap and static "
                   "buffers, from another thread, after the hooks calls, after slot 3):\n")
        out.append("| version | distinct answers over all asks | steps |")
        out.append("|---|---|---|")
        by_v = defaultdict(list)
        for a in same["answers"]:
            by_v[a["v"]].append(a)
        for v, answers in sorted(by_v.items()):
            distinct = OrderedDict()
            for a in answers:
                distinct.setdefault(a["out"] + " rc=" + a["rc"], []).append(a["step"])
            desc = "; ".join("`%s` at %s" % (k, ", ".join(s)) for k, s in distinct.items())
            out.append("| %d | %d | %s |" % (v, len(distinct), desc))
        out.append("")
    # comparisons with the reference process
    ref_name = "noaslr-1"
    ref = runs.get(ref_name)
    out.append("**Across processes** (same time, each run's last `ask`; reference `%s`):\n" % ref_name)
    out.append("| run | ASLR | libcuda at | 13000 (or first version) | 13002 (or last) | equal to reference |")
    out.append("|---|---|---|---|---|---|")
    for name, info in runs.items():
        if name in ("versions", "times"):
            continue
        if not info["answers"]:
            out.append("| %s | %s | %s | - | - | no answer (%s) |" % (
                name, info["aslr"], info["libcuda"], (info["lines"][-1] if info["lines"] else "no output")))
            continue
        vs = sorted({a["v"] for a in info["answers"]})
        lo, hi = last_ask(info, vs[0]), last_ask(info, vs[-1])
        eq = "-"
        if ref and ref is not info and ref["answers"]:
            r_lo, r_hi = last_ask(ref, vs[0]), last_ask(ref, vs[-1])
            if r_lo and r_hi:
                eq = "%s / %s" % ("yes" if r_lo["out"] == lo["out"] else "no",
                                  "yes" if r_hi["out"] == hi["out"] else "no")
        out.append("| %s | %s | %s | `%s` rc=%s | `%s` rc=%s | %s |" % (
            name, info["aslr"], info["libcuda"], lo["out"], lo["rc"], hi["out"], hi["rc"], eq))
    out.append("")
    for name, title in (("versions", "Versions"), ("times", "Times")):
        info = runs.get(name)
        if not info:
            continue
        out.append("**%s** (one process):\n" % title)
        out.append("| version | time | rc | answer | overrun |")
        out.append("|---|---|---|---|---|")
        for a in info["answers"]:
            out.append("| %d | %d | %s | `%s` | %d |" % (a["v"], a["ts"], a["rc"], a["out"], a["overrun"]))
        out.append("")
    order = runs.get("noaslr-order")
    if order:
        out.append("**Before cuInit, after it, after the other tables** (`noaslr-order`):\n")
        for a in order["answers"]:
            out.append("- %s v=%d rc=%s `%s`" % (a["step"], a["v"], a["rc"], a["out"]))
        out.append("")


def answers_tsv(runs, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("run\taslr\tlibcuda\tstep\tversion\ttime\trc\tanswer\toverrun\n")
        for name, info in runs.items():
            for a in info["answers"]:
                f.write("%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d\n" % (
                    name, info["aslr"], info["libcuda"], a["step"], a["v"], a["ts"], a["rc"], a["out"], a["overrun"]))


def readings(rows, progs, primary, runs):
    """Plain statements of what the runs show, each with the runs it rests on."""
    says = []

    def v(name):
        r = rows.get(name)
        return r["verdict"] if r else None

    def passed(name):
        return v(name) == "pass" or (v(name) or "").startswith("pass ")

    for p in progs:
        if p == "torch":
            continue
        if v(p + ".real") is None:
            continue
        base = passed(p + ".real")
        says.append("- `%s`: with the driver's own tables through the shim: %s; copies with stubs: %s; shallow "
                    "copies: %s; stubs in the driver's tables: %s; trampolines in anonymous memory: %s." % (
                        p, v(p + ".real"), v(p + ".deep"), v(p + ".shallow"), v(p + ".inplace"), v(p + ".anon")))
        if not base:
            says.append("  The baseline failed: nothing below is meaningful for `%s`." % p)
            continue
        lone = [u for u in TABLES if v("%s.only-shallow-%s" % (p, u)) not in (None, "pass")]
        ok = [u for u in TABLES if passed("%s.only-shallow-%s" % (p, u))]
        if lone or ok:
            says.append("  A shallow copy of one table alone fails for: %s; passes for: %s." % (
                ", ".join("%s (%s)" % (u, TABLES[u]) for u in lone) or "none",
                ", ".join(ok) or "none"))
    slots = slot_runs(rows)
    if slots:
        bad = [n for n in slots if not passed(n)]
        says.append("- Slots whose pointer alone, replaced in place, fails the check: %s (of %d tried)." % (
            ", ".join("`%s`" % n.split(".", 1)[1] for n in bad) or "none", len(slots)))
    for p in progs:
        m = [(n, v("%s.%s" % (p, n))) for n, _ in M_ROWS if v("%s.%s" % (p, n)) is not None]
        if m:
            says.append("- `%s`, integrity answered by another process: %s." % (
                p, "; ".join("%s: %s" % (n, x) for n, x in m)))
    if runs:
        r1, r2 = runs.get("noaslr-1"), runs.get("noaslr-2")
        if r1 and r2 and r1["answers"] and r2["answers"]:
            same_addr = r1["libcuda"] == r2["libcuda"]
            hi1, hi2 = r1["answers"][-1], r2["answers"][-1]
            says.append("- Two processes without address randomisation (driver at %s and %s): last answers %s." % (
                r1["libcuda"], r2["libcuda"], "equal" if hi1["out"] == hi2["out"] else "different"))
            if not same_addr:
                says.append("  (the driver was not at the same address in both: randomisation was not off)")
        a1, a2 = runs.get("aslr-1"), runs.get("aslr-2")
        if a1 and a2 and a1["answers"] and a2["answers"]:
            says.append("- Two processes with randomisation, same time: version %d answers %s, version %d answers %s." % (
                a1["answers"][0]["v"], "equal" if a1["answers"][0]["out"] == a2["answers"][0]["out"] else "different",
                a1["answers"][-1]["v"], "equal" if a1["answers"][-1]["out"] == a2["answers"][-1]["out"] else "different"))
    return says


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--facts", required=True)
    ap.add_argument("--primary", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--answers", required=True)
    args = ap.parse_args()
    rows = read_results(args.work)
    runs = read_probe(args.work)
    answers_tsv(runs, args.answers)
    progs = programs(rows)
    out = ["# What cudart's integrity check covers: gpu/integrity-probe.sh\n"]
    out.append("```")
    out.append(open(args.facts, encoding="utf-8", errors="replace").read().rstrip())
    out.append("```\n")
    out.append("Verdicts: `pass` (the program's initialisation, allocation, kernel and copy back worked), "
               "`fail 103` (cudaGetDeviceCount answered cudaErrorSoftwareValidityNotEstablished), "
               "`fail rc=N: ...` (another failure: the last words), `void (mirror collision)` (a page the "
               "mirror needed was taken in the process: not an outcome). Every run's output, stderr and "
               "cuda-trace log are in logs.tar.xz (`runs/<name>/`).\n")
    out.append("## What the runs show\n")
    out.extend(readings(rows, progs, args.primary, runs))
    out.append("")
    cols = [p for p in progs if p != "torch"]
    out.append("## A. cudart's side: the tables handed out in different ways\n")
    out.append("| experiment | what cudart gets | " + " | ".join(cols) + " |")
    out.append("|---|---|" + "---|" * len(cols))
    for n, desc in A_ROWS:
        out.append("| %s | %s | %s |" % (n, desc, " | ".join(cell(rows, "%s.%s" % (p, n)) for p in cols)))
    for kind, desc in (("shallow", "a shallow copy of this table alone, the others the driver's"),
                       ("deep", "a copy with stubs of this table alone"),
                       ("inplace", "stubs written into this table alone"),
                       ("anon", "anonymous trampolines in this table alone")):
        names = ["only-%s-%s" % (kind, u) for u in TABLES]
        if not any("%s.%s" % (p, n) in rows for p in cols for n in names):
            continue
        for u in TABLES:
            n = "only-%s-%s" % (kind, u)
            out.append("| %s | %s (%s) | %s |" % (n, desc, TABLES[u],
                                                   " | ".join(cell(rows, "%s.%s" % (p, n)) for p in cols)))
    slot_rows = slot_runs(rows)
    if slot_rows:
        out.append("\n**Slot by slot** (one word of one table replaced, everything else the driver's):\n")
        out.append("| run | verdict |")
        out.append("|---|---|")
        for n in slot_rows:
            out.append("| %s | %s |" % (n, cell(rows, n)))
    out.append("\n## M. The integrity check answered by another process (ivcuda's situation)\n")
    out.append("The helper (gpu/tools/integrity-probe/helper.c) loads the driver in a process of its own, "
               "as ivcuda's server does, and answers slot 1 with the arguments the program's cudart passed. "
               "Its answers are in `helpers/*.log`.\n")
    mcols = progs
    out.append("| experiment | what cudart gets | " + " | ".join(mcols) + " |")
    out.append("|---|---|" + "---|" * len(mcols))
    for n, desc in M_ROWS:
        extra = ""
        r = rows.get("%s.%s" % (mcols[0], n)) if mcols else None
        if n == "mirror-needed" and r:
            extra = " (`%s`)" % r["spec"]
        out.append("| %s | %s%s | %s |" % (n, desc, extra, " | ".join(cell(rows, "%s.%s" % (p, n)) for p in mcols)))
    if "torch" in progs:
        out.append("\n## PyTorch\n")
        out.append("| run | verdict | seconds |")
        out.append("|---|---|---|")
        for n, r in rows.items():
            if r["prog"] == "torch":
                out.append("| %s | %s | %s |" % (n, cell(rows, n), r["wall"]))
    out.append("\n## B. The driver's answers (gpu/tools/integrity-probe/probe.c)\n")
    probe_section(runs, out)
    out.append("## Every run\n")
    out.append("| run | program | CUDA_TRACE_TABLES | other settings | exit | verdict | s |")
    out.append("|---|---|---|---|---|---|---|")
    for n, r in rows.items():
        out.append("| %s | %s | `%s` | %s | %s | %s | %s |" % (
            n, r["prog"], r["spec"], r["extra"].replace(os.path.dirname(args.work), "…") or "-", r["rc"],
            r["verdict"].replace("|", "/"), r["wall"]))
    with open(args.report, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
