#!/usr/bin/env python3
"""oracle-report.md from gpu/integrity-probe.sh's parts P and O: what the driver's
per-process integrity answer (version 13002) depends on, measured by the probe, and whether
an oracle — another process made like the asking one — answers it so that cudart accepts.
Writes only what was measured; a comparison whose runs are missing says so."""
import argparse
import glob
import os
import re
from collections import OrderedDict

from report import read_results  # report.py beside this file: results.tsv, retries folded in

O_ROWS = [
    ("pid-self", "every table at the oracle's address with its words; the oracle has the program's pid "
                 "and answers in a thread at the asking thread's pthread_self()"),
    ("min", "only 6bd5fb6c (address) and d4082055 (address, slot-1 trampoline) at the oracle's, the "
            "rest copies as ivcuda hands out; pid and pthread_self() as above"),
    ("all", "pid-self, and the asking thread's stack guard, pointer guard and AT_RANDOM bytes"),
    ("min-all", "min, with the guards"),
    ("pid", "every table at the oracle's; the oracle has the pid only (control)"),
    ("self", "every table at the oracle's; the thread at pthread_self() only (control)"),
    ("none", "every table at the oracle's; neither (control: the helper of device run 2)"),
    ("deep", "copies with stubs (ivcuda's tables today); pid, pthread_self() and guards (control)"),
]


def read_probe_runs(work):
    runs = OrderedDict()
    for path in sorted(glob.glob(os.path.join(work, "probe", "p-*.out"))):
        name = os.path.basename(path)[:-4]
        info = {"pid": None, "aslr": None, "libcuda": None, "threads": {}, "answers": [], "notes": []}
        for line in open(path, encoding="utf-8", errors="replace"):
            line = line.rstrip("\n")
            m = re.match(r"probe pid=(\d+) aslr=(\S+)", line)
            if m:
                info["pid"], info["aslr"] = m.group(1), m.group(2)
                continue
            m = re.match(r"loaded path=\S+ libcuda=(\S+)", line)
            if m:
                info["libcuda"] = m.group(1)
                continue
            m = re.match(r"thread step=(\S+) pid=(\d+) tid=(\d+) self=(\S+)", line)
            if m:
                info["threads"][m.group(1)] = {"pid": m.group(2), "tid": m.group(3), "self": m.group(4)}
                continue
            m = re.match(r"answer step=(\S+) v=(\d+) ts=(\d+) rc=(\S+) out=(\S+)", line)
            if m:
                info["answers"].append({"step": m.group(1), "v": int(m.group(2)), "rc": m.group(4),
                                        "out": m.group(5)})
                continue
            if re.match(r"(thread step=\S+ error=|probe pidns=|fork step=|changed step=|error |exit )", line):
                info["notes"].append(line)
        runs[name] = info
    return runs


def step_kind(step):
    """'11:askat:7e5a..' -> 'askat:7e5a..'; '9:askseq-1' -> 'askseq-1'"""
    return step.split(":", 1)[1] if ":" in step else step


def answer(runs, run, kind, version=13002, nth=0):
    """The nth answer of `run` for version from steps of this kind; None if absent."""
    info = runs.get(run)
    if not info:
        return None
    found = [a for a in info["answers"] if step_kind(a["step"]) == kind and a["v"] == version]
    if len(found) <= nth:
        return None
    a = found[nth]
    return a["out"] if a["rc"] == "0" else "rc=%s" % a["rc"]


def compare(a, b):
    if a is None or b is None:
        return "not measured"
    if a.startswith("rc=") or b.startswith("rc="):
        return "no answer (%s / %s)" % (a, b)
    return "equal" if a == b else "different"


def readings(runs, xa, xb):
    says = []
    same = "p-same"
    if same in runs:
        main0 = answer(runs, same, "ask")
        t = runs[same]["threads"]
        seq = [t.get(k, {}) for k in (s for s in t if step_kind(s).startswith("askseq"))]
        if len(seq) == 2:
            says.append("- Two threads one after the other (pthread_self %s and %s, thread ids %s and %s): "
                        "answers %s." % (seq[0].get("self"), seq[1].get("self"), seq[0].get("tid"),
                                         seq[1].get("tid"),
                                         compare(answer(runs, same, "askseq-1"), answer(runs, same, "askseq-2"))))
        says.append("- Threads placed at pthread_self %s twice: answers %s; at %s and at %s: %s." % (
            xa, compare(answer(runs, same, "askat:" + xa), answer(runs, same, "askat:" + xa, nth=1)),
            xa, xb, compare(answer(runs, same, "askat:" + xa), answer(runs, same, "askat:" + xb))))
        says.append("- A thread at %s with a stack twice as large (same pthread_self, another stack block): %s "
                    "to the thread at %s with the usual one." % (
                        xa, compare(answer(runs, same, "askat:" + xa), answer(runs, same, "askat2:" + xa)), xa))
        says.append("- The main thread on another stack (same pthread_self): %s to the main thread's answer." %
                    compare(main0, answer(runs, same, "askctx")))
        says.append("- The main thread with its stack guard (%%fs:0x28) changed: %s; with the AT_RANDOM bytes "
                    "changed: %s; at the end, unchanged again: %s." % (
                        compare(main0, answer(runs, same, "askcanary")), compare(main0, answer(runs, same, "askrandom")),
                        compare(main0, answer(runs, same, "ask", nth=1))))
    if "p-guard" in runs:
        says.append("- The main thread with its pointer guard (%%fs:0x30) changed: %s." % compare(
            answer(runs, "p-guard", "ask"), answer(runs, "p-guard", "askguard")))
    if "p-fork" in runs:
        child = [s for s in runs["p-fork"]["threads"] if s.endswith("askfork-child")]
        t = runs["p-fork"]["threads"].get(child[0], {}) if child else {}
        says.append("- A child made by fork() (pid %s, the parent's memory and pthread_self %s): %s to the "
                    "parent's answer." % (t.get("pid"), t.get("self"),
                                          compare(answer(runs, "p-fork", "ask"),
                                                  answer(runs, "p-fork", "askfork-child"))))

    def pair(r1, r2, what):
        if r1 not in runs or r2 not in runs:
            return "- %s: not measured (%s, %s)." % (what, r1, r2)
        d1, d2 = runs[r1], runs[r2]
        return "- %s (pids %s/%s, driver at %s/%s, main pthread_self %s/%s): main threads' answers %s; " \
               "threads at %s: %s." % (
                   what, d1["pid"], d2["pid"], d1["libcuda"], d2["libcuda"],
                   next((v["self"] for k, v in d1["threads"].items() if step_kind(k) == "ask"), None),
                   next((v["self"] for k, v in d2["threads"].items() if step_kind(k) == "ask"), None),
                   compare(answer(runs, r1, "ask"), answer(runs, r2, "ask")), xa,
                   compare(answer(runs, r1, "askat:" + xa), answer(runs, r2, "askat:" + xa)))

    says.append(pair("p-pid-a1", "p-pid-a2", "Two processes with pid 4242 (PID namespaces of their own), "
                                            "without randomisation"))
    says.append(pair("p-pid-a1", "p-pid-b", "pid 4242 and pid 4243, without randomisation"))
    says.append(pair("p-pid-aslr1", "p-pid-aslr2", "Two processes with pid 4242, with randomisation"))
    says.append(pair("p-pid-a1", "p-pid-aslr1", "pid 4242 without and with randomisation"))
    says.append(pair("p-nopid-1", "p-nopid-2", "Two processes without namespaces (different pids), without "
                                              "randomisation (control)"))
    return says


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--facts", required=True)
    ap.add_argument("--primary", required=True)
    ap.add_argument("--xa", required=True)
    ap.add_argument("--xb", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    runs = read_probe_runs(args.work)
    rows = read_results(args.work)
    out = ["# The per-process integrity answer, and oracles: gpu/integrity-probe.sh parts P and O\n", "```",
           open(args.facts, encoding="utf-8", errors="replace").read().rstrip(), "```\n"]
    out.append("## P. What the driver's version-13002 answer depends on\n")
    out.append("The probe (gpu/tools/integrity-probe/probe.c) calls d4082055 slot 1 itself; every call of a "
               "run has the same time. `equal`/`different` compare 16-byte answers.\n")
    out.extend(readings(runs, args.xa, args.xb))
    out.append("\n## O. The integrity check answered by an oracle\n")
    out.append("The oracle helper (helper.c `--oracles`) starts, per program, an oracle: the driver in a process "
               "made like the program as the flags say. The program's tables are placed as the row says. "
               "Verdicts: `pass` (initialisation, allocation, kernel, copy back), `fail 103` "
               "(cudaErrorSoftwareValidityNotEstablished), `no oracle: ...` (the oracle could not be had), "
               "`void (mirror collision)`.\n")
    progs = []
    for n, r in rows.items():
        if ".oracle-" in n and r["prog"] not in progs:
            progs.append(r["prog"])
    if progs:
        out.append("| experiment | what | " + " | ".join(progs) + " |")
        out.append("|---|---|" + "---|" * len(progs))
        for key, desc in O_ROWS:
            cells = []
            for p in progs:
                r = rows.get("%s.oracle-%s" % (p, key))
                v = r["verdict"] if r else "not run"
                cells.append("**pass**" if v == "pass" else v.replace("|", "/"))
            out.append("| %s | %s | %s |" % (key, desc, " | ".join(cells)))
    else:
        out.append("No oracle run (part O not run, or the oracle helper did not start: steps.log).")
    log = os.path.join(args.work, "helpers", "or1.log")
    if os.path.exists(log):
        lines = [l.rstrip("\n") for l in open(log, encoding="utf-8", errors="replace")
                 if l.startswith(("oracle peer", "integrity ")) and ("13002" in l or l.startswith("oracle"))]
        out.append("\nThe oracles' version-13002 calls and starts (helpers/or1.log, first 40):\n")
        out.append("```")
        out.extend(l[:300] for l in lines[:40])
        out.append("```")
    out.append("\n## The probe's answers\n")
    out.append("| run | aslr | driver at | step | pid | tid | pthread_self | 13000 | 13002 |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for name, info in runs.items():
        for step, t in info["threads"].items():
            a0 = [a for a in info["answers"] if a["step"] == step and a["v"] == 13000]
            a2 = [a for a in info["answers"] if a["step"] == step and a["v"] == 13002]
            fmt = lambda a: ("`%s`" % a[0]["out"] if a[0]["rc"] == "0" else "rc=%s" % a[0]["rc"]) if a else "-"
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, info["aslr"], info["libcuda"], step, t["pid"], t["tid"], t["self"], fmt(a0), fmt(a2)))
        for note in info["notes"]:
            if not note.startswith("exit 0"):
                out.append("| %s | | | %s | | | | | |" % (name, note.replace("|", "/")[:160]))
    with open(args.report, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
