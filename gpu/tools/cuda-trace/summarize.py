#!/usr/bin/env python3
"""Summarises cuda-trace files (README.md: the format) into one Markdown page: each export
table's layout and who calls which slot with what, every cuGetProcAddress answer, and which
driver functions the programs call. Input for docs/export-tables.md and for planning the
guest library.

usage: summarize.py [--examples N] [--label-from-path] TRACE... > summary.md
A trace's program is its exe; with --label-from-path, the trace file's parent directory
and name stem (as gpu/apps.sh lays them out: <program>/<mode>.<pid>.log)."""

import argparse
import collections
import os
import re
import sys

KNOWN = {  # names from docs and the design brief; the trace establishes the facts
    "6bd5fb6c": "CUDART interface",
    "a094798c": "runtime callback hooks",
    "42d85a81": "tools TLS",
    "c693336e": "context-local storage",
    "263e8860": "context checks",
    "d4082055": "integrity check",
    "f8cff951": "(asked first by cudart)",
    "21318c60": "cuBLASLt",
    "69a28e9f": "NVML",
    "da9151d3": "NVRTC sample",
}
ALL_CALLS = {"d4082055"}  # tables whose every logged call is listed

TOKEN = re.compile(r"(\S+?)=(\S*)")
IDENTITY_FN = re.compile(r" fn=(cuDeviceGetUuid|cuDeviceGetUuid_v2|cuDeviceGetPCIBusId|cuDriverGetVersion|cuDeviceGetName) ")


def fields(line):
    tag, _, rest = line.partition(" ")
    return tag, dict(TOKEN.findall(rest))


def obj(where):
    """'libfoo.so+0x12(sym)' -> 'libfoo.so'"""
    return where.split("+", 1)[0] if where else "?"


class Trace:
    def __init__(self, path, label):
        self.path = path
        self.label = label
        self.driver_version = None
        self.exe = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=6, help="example calls per slot")
    ap.add_argument("--label-from-path", action="store_true")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()

    traces = []
    gpa = collections.defaultdict(lambda: {"callers": set(), "programs": set(), "answers": collections.Counter()})
    exp = collections.defaultdict(lambda: {"rc": collections.Counter(), "callers": collections.Counter(),
                                           "programs": set(), "first": collections.Counter()})
    layout = {}  # uuid -> {word: (kind, value-or-desc)} from the first trace that copied it
    layout_diff = collections.defaultdict(set)  # uuid -> words whose kind differed between traces
    table_words = collections.defaultdict(collections.Counter)
    slot_calls = collections.Counter()  # (uuid, slot) -> calls
    slot_programs = collections.defaultdict(set)
    slot_callers = collections.defaultdict(collections.Counter)
    slot_examples = collections.defaultdict(list)
    slot_seen = collections.defaultdict(set)
    changed = collections.defaultdict(collections.Counter)  # uuid -> (word, where, was, now) -> traces
    fn_calls = collections.Counter()
    fn_programs = collections.defaultdict(set)
    identity = collections.defaultdict(set)  # fn -> outputs seen (uuid, pci id, version)

    for path in args.traces:
        label = path
        if args.label_from_path:
            label = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path).split(".")[0]
        t = Trace(path, label)
        traces.append(t)
        pending = {}  # seq -> XE fields
        pending_ce = {}
        try:
            lines = open(path, errors="replace").read().splitlines()
        except OSError as e:
            print(f"<!-- {path}: {e} -->")
            continue
        for line in lines:
            tag = line[: line.find(" ")]
            if tag in ("CE", "CR") and not IDENTITY_FN.search(line):
                continue  # the bulk of a trace; only the identity queries are summarised
            tag, f = fields(line)
            if tag == "H":
                if "driver_version" in f:
                    t.driver_version = f["driver_version"]
                if "exe" in f:
                    t.exe = f["exe"]
            elif tag in ("GPA", "GPA1"):
                key = (f.get("sym", ""), int(f.get("ver", "0") or 0), f.get("flags", "0"))
                g = gpa[key]
                g["callers"].add(obj(f.get("caller")))
                g["programs"].add(label)
                g["answers"][(f.get("rc"), f.get("given", "-"), f.get("real", "-").split("(")[-1].rstrip(")"))] += 1
            elif tag == "EXP":
                u = f.get("uuid", "?")
                e = exp[u]
                e["rc"][f.get("rc")] += 1
                e["callers"][obj(f.get("caller"))] += 1
                e["programs"].add(label)
                e["first"][f.get("first")] += 1
            elif tag == "XW":
                u, w = f.get("table"), int(f.get("word", "0"))
                kind = f.get("kind", "?")
                desc = f.get("at", f.get("value", ""))
                if kind == "data":
                    desc += " bytes=" + f.get("bytes", "")[:64]
                if kind == "size":
                    desc = str(int(f.get("value", "0"), 16))
                elif kind in ("value", "null"):
                    desc = "0x" + f.get("value", "0")
                layout.setdefault(u, {})
                if w not in layout[u]:
                    layout[u][w] = (kind, desc)
                elif layout[u][w][0] != kind:
                    layout_diff[u].add(w)
                table_words[u][w] += 1
            elif tag == "XC":
                changed[f.get("table")][(int(f.get("word", "0")), f.get("in"), f.get("was"), f.get("now"))] += 1
            elif tag == "XE":
                pending[f.get("seq")] = (line, f)
            elif tag == "XR":
                entry = pending.pop(f.get("seq"), None)
                u, s = f.get("table"), int(f.get("slot", "0"))
                caller = obj(entry[1].get("caller")) if entry else "?"
                slot_callers[(u, s)][caller] += 1
                if entry:
                    ex = entry[1]
                    # one example per distinct (caller, arguments that are not addresses)
                    sig = (caller, tuple(a if len(a) < 9 else "ptr" for a in ex.get("a", "").split(",")))
                    wanted = args.examples if u[:8] not in ALL_CALLS else 10 ** 6
                    if sig not in slot_seen[(u, s)] or u[:8] in ALL_CALLS:
                        slot_seen[(u, s)].add(sig)
                        if len(slot_examples[(u, s)]) < wanted:
                            slot_examples[(u, s)].append((label, entry[0], line))
            elif tag == "CE":
                pending_ce[f.get("seq")] = f
            elif tag == "CR":
                ce = pending_ce.pop(f.get("seq"), None)
                fn = f.get("fn", "")
                if ce and fn in ("cuDeviceGetUuid", "cuDeviceGetUuid_v2", "cuDeviceGetPCIBusId", "cuDriverGetVersion",
                                 "cuDeviceGetName") and f.get("rc") == "0":
                    # each of these writes its answer through its first argument
                    if f.get("p0'", "same") != "same":
                        identity[fn].add(f["p0'"][:64])
            elif tag == "S":
                n = int(f.get("calls", "0"))
                if f.get("kind") == "slot":
                    key = (f.get("table"), int(f.get("slot", "0")))
                    slot_calls[key] += n
                    slot_programs[key].add(label)
                else:
                    fn_calls[f.get("fn")] += n
                    fn_programs[f.get("fn")].add(label)
        for seq, (line, f) in pending.items():  # a slot call that never returned (crash, longjmp, untracked)
            u, s = f.get("table"), int(f.get("slot", "0"))
            slot_examples[(u, s)].append((label, line, "(no return seen)")) if len(slot_examples[(u, s)]) < args.examples else None

    out = sys.stdout.write
    versions = collections.Counter(t.driver_version for t in traces)
    out("# cuda-trace summary\n\n")
    out(f"{len(traces)} traces; driver version(s) (cuDriverGetVersion): "
        + ", ".join(f"{v} ({n})" for v, n in versions.items()) + "\n\n")
    if identity:
        out("Device identity as the programs read it (bytes written, hex):\n\n")
        for fn, vals in sorted(identity.items()):
            for v in sorted(vals)[:4]:
                out(f"- `{fn}`: `{v}`\n")
        out("\n")

    out("## Export tables\n\n")
    out("| UUID | known as | first word (count) | rc (count) | asked by | programs | slots called |\n|---|---|---|---|---|---|---|\n")
    for u in sorted(exp):
        e = exp[u]
        called = sorted(s for (uu, s) in slot_calls if uu == u)
        out(f"| `{u}` | {KNOWN.get(u[:8], '')} | " + ", ".join(f"{k} ({n})" for k, n in e["first"].most_common(3))
            + " | " + ", ".join(f"{k} ({n})" for k, n in e["rc"].items())
            + " | " + ", ".join(f"{k} ({n})" for k, n in e["callers"].most_common(8))
            + f" | {len(e['programs'])} | {', '.join(map(str, called)) or '-'} |\n")
    out("\n")
    for u in sorted(set(layout) | {uu for (uu, _) in slot_calls}):
        out(f"### `{u}` {KNOWN.get(u[:8], '')}\n\n")
        words = layout.get(u, {})
        out("| word | kind | driver address or value | calls | programs | callers |\n|---|---|---|---|---|---|\n")
        for w in sorted(words):
            kind, desc = words[w]
            diff = " (kind differs between traces)" if w in layout_diff[u] else ""
            callers = ", ".join(f"{k} ({n})" for k, n in slot_callers[(u, w)].most_common(6))
            out(f"| {w} | {kind}{diff} | `{desc}` | {slot_calls.get((u, w), 0)} | {len(slot_programs[(u, w)])} | {callers} |\n")
        out("\n")
        if changed.get(u):
            out("Words that changed while the programs ran (`in=driver`: in the driver's table; `in=copy`: the program "
                "wrote into the table it was given):\n\n")
            for (w, where, was, now), n in sorted(changed[u].items())[:20]:
                out(f"- word {w} in={where}: {was} -> {now} ({n} traces)\n")
            out("\n")
        for (uu, s), examples in sorted(slot_examples.items()):
            if uu != u:
                continue
            out(f"Slot {s}: {slot_calls.get((u, s), 0)} calls"
                + (" (every logged call)" if u[:8] in ALL_CALLS else f" (up to {args.examples} distinct examples)") + "\n\n")
            out("```\n")
            for label, entry, ret in examples:
                out(f"# {label}\n{entry}\n{ret}\n")
            out("```\n\n")

    out("## cuGetProcAddress answers\n\n")
    out("`symbol version flags -> rc given (driver's symbol) [callers] programs`; `given=pool:N` is a function the "
        "driver does not export.\n\n```\n")
    for (sym, ver, flags), g in sorted(gpa.items()):
        answers = "; ".join(f"rc={rc} {given} ({real})" if given != real else f"rc={rc} {given}"
                            for (rc, given, real) in g["answers"])
        out(f"{sym or '(empty)'} {ver} {flags} -> {answers} [{','.join(sorted(g['callers']))}] {len(g['programs'])}\n")
    out("```\n\n")
    failed = sorted({sym for (sym, ver, flags), g in gpa.items() for (rc, _, _) in g["answers"] if rc != "0"})
    out(f"Looked up but not answered (rc != 0): {', '.join(failed) or 'none'}\n\n")

    out("## Driver functions called (all calls counted, through exported names or looked-up pointers)\n\n")
    out("| function | calls | programs |\n|---|---|---|\n")
    for fn, n in fn_calls.most_common():
        out(f"| {fn} | {n} | {len(fn_programs[fn])} |\n")
    out("\n")


if __name__ == "__main__":
    main()
