#!/usr/bin/env python3
"""Compares a PyTorch acceptance script's output with its two native runs (common.py: the
line format). `check` lines must be equal; each `value` must lie within the spread the two
native runs show (|other - native| <= |native - native2|; equal when the native runs agree
exactly); `info:`/`time:` lines are ignored. Prints one line: `equal`, `within spread
(largest deviation / spread ...)` or `differs: ...`; exit 0 for the first two.

usage: compare.py NATIVE NATIVE2 OTHER
       compare.py --spread NATIVE NATIVE2   (how far two native runs differ)"""

import math
import sys


def parse(path):
    values, checks, status = {}, {}, "no PASSED/FAILED line"
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        return values, checks, f"unreadable: {e}"
    for line in lines:
        parts = line.split(" ", 2)
        if parts[0] == "value" and len(parts) == 3:
            try:
                values[parts[1]] = float(parts[2])
            except ValueError:
                checks["value:" + parts[1]] = parts[2]
        elif parts[0] == "check" and len(parts) >= 2:
            checks[parts[1]] = parts[2] if len(parts) == 3 else ""
        elif line in ("PASSED", "FAILED"):
            status = line
    return values, checks, status


def spread(native, native2):
    v1, c1, s1 = parse(native)
    v2, c2, s2 = parse(native2)
    diffs = [k for k in v1 if k in v2 and v1[k] != v2[k] and not (math.isnan(v1[k]) and math.isnan(v2[k]))]
    if s1 != "PASSED" or s2 != "PASSED":
        return f"native runs: {s1} / {s2}"
    if c1 != c2 or set(v1) != set(v2):
        return "native runs differ in their checks or value names"
    if not diffs:
        return "identical"
    worst = max(diffs, key=lambda k: abs(v1[k] - v2[k]) / max(abs(v1[k]), 1e-30))
    return f"{len(diffs)} of {len(v1)} values differ; largest relative {abs(v1[worst] - v2[worst]) / max(abs(v1[worst]), 1e-30):.3g} ({worst})"


def compare(native, native2, other):
    v1, c1, s1 = parse(native)
    v2, _, _ = parse(native2)
    vo, co, so = parse(other)
    if so != "PASSED":
        return False, f"differs: {so}"
    if s1 != "PASSED":
        return False, f"differs: native {s1}"
    for k in sorted(set(c1) | set(co)):
        if c1.get(k) != co.get(k):
            return False, f"differs: check {k}: native {c1.get(k)!r}, this run {co.get(k)!r}"
    missing = sorted(set(v1) ^ set(vo))
    if missing:
        return False, f"differs: values only in one run: {', '.join(missing[:5])}"
    worst_ratio, worst_key, exact = 0.0, None, True
    for k, n in v1.items():
        o = vo[k]
        if o == n or (math.isnan(o) and math.isnan(n)):
            continue
        exact = False
        allowed = abs(n - v2[k]) if k in v2 else 0.0
        dev = abs(o - n)
        if dev > allowed:
            return False, f"differs: {k} = {o!r}, native {n!r}, native spread {allowed:.3g}"
        ratio = dev / allowed
        if ratio >= worst_ratio:
            worst_ratio, worst_key = ratio, k
    if exact:
        return True, "equal"
    return True, f"within spread (largest deviation {worst_ratio:.2f} of the spread, {worst_key})"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--spread":
        print(spread(sys.argv[2], sys.argv[3]))
        return 0
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    ok, text = compare(*sys.argv[1:])
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
