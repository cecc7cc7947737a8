#!/usr/bin/env python3
"""The part of a program's output that must be equal between a native run and one through
ivcuda: the output with measurements taken out. On a line that reports a measurement
(time, bandwidth, throughput, performance, or a number with a time unit) every number
becomes '#'; long hexadecimal addresses become 0x#; carriage returns and trailing blanks
go; lines starting `time:`/`info:` (our own programs' convention) are dropped.

usage: normalize_output.py [--mask floats|numbers|within:LO:HI|sorted|uname] FILE   (the result on stdout)
       normalize_output.py [--mask ...] --write FILE...  (each X.out to X.norm, X to X.norm)
       normalize_output.py --self-test
  --mask floats        also every number with a decimal point, on every line (a sample that
                       prints bare tables of measurements)
  --mask numbers       every number on every line (only the words remain)
  --mask within:LO:HI  also every number from LO to HI (inclusive) becomes '~': a tolerance for a
                       sample whose result is not the same from run to run natively (its input is
                       random, seeded by the clock). A number outside the range stays as it is,
                       so a wrong result still differs. gpu/corpus-samples.txt says why each
                       sample that has one has its range.
  --mask sorted        the lines sorted: a sample whose kernels print from many threads, whose
                       order of arrival CUDA leaves open; every line must still be there.
  --mask uname         on a line that starts with OS, what follows its first '=' or ':' becomes '#':
                       a sample that prints the running kernel's release and version (uname), which
                       inside a VM are the guest kernel's, not the host's."""

import argparse
import re
import sys

MEASUREMENT = re.compile(
    r"\b(time[sdr]?|timing|elapsed|duration|latency|throughput|bandwidth|performance|perf|speed|speedup|"
    r"[gmkt]?flop/?s|[gmkt]?ops|[gmk]b/s|[gmk]bytes/s|[gmk]?numbers/s|megaelements/s|[gmkt]?pix(els)?/s(ec)?|"
    r"msecs?|ms|millisec(ond)?s?|secs?|seconds?|usecs?|us|µs|ns|fps|per\s+second)\b"
    r"|\d(ms|s|us|ns)\b",
    re.IGNORECASE,
)
# inf and nan are what a measurement prints when its time was 0 (cudaGraphsPerfScaling's columns)
NON_FINITE = r"|[-+]?\b(?:inf|nan)\b"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?" + NON_FINITE, re.IGNORECASE)
FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+" + NON_FINITE, re.IGNORECASE)
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
UNAME = re.compile(r"^(OS[^=:]*[=:]).*$")


def within(mask):
    """(lo, hi) of a 'within:LO:HI' mask, else None."""
    if mask is None or not mask.startswith("within:"):
        return None
    lo, hi = (float(x) for x in mask.split(":")[1:3])
    return lo, hi


def normalize(line, mask):
    line = line.replace("\r", "").rstrip()
    if line.startswith(("time:", "info:")):
        return None
    line = ADDRESS.sub("0x#", line)
    if mask == "uname":
        line = UNAME.sub(r"\1 #", line)
    if mask == "numbers" or MEASUREMENT.search(line):
        return NUMBER.sub("#", line)
    if mask == "floats":
        return FLOAT.sub("#", line)
    bounds = within(mask)
    if bounds is not None:
        return NUMBER.sub(lambda m: "~" if bounds[0] <= float(m.group()) <= bounds[1] else m.group(), line)
    return line


def mask_arg(value):
    if value in ("floats", "numbers", "sorted", "uname"):
        return value
    try:
        lo, hi = within(value)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{value!r} is not floats, numbers, sorted, uname or within:LO:HI")
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{value!r}: LO is above HI")
    return value


def self_test():
    """What the masks promise, on lines the corpus prints; exits 1 on the first that fails."""
    cases = [
        ("Texture fetch rate (Mpix/s) for pitch linear: 2.96e+05; for array: 3.10e+05", None,
         "Texture fetch rate (Mpix/s) for pitch linear: #; for array: #"),
        ("Result native operators\t: 651417.000000 ", "within:589824:720896", "Result native operators\t: ~"),
        ("Result intrinsics\t: 0.000000 ", "within:589824:720896", "Result intrinsics\t: 0.000000"),
        ("GPU Device 0: \"Hopper\" with compute capability 9.0", "within:589824:720896",
         "GPU Device 0: \"Hopper\" with compute capability 9.0"),
        ("&&&& fp16ScalarProduct PASSED", "within:589824:720896", "&&&& fp16ScalarProduct PASSED"),
        ("Processing time: 12.5 (ms)", None, "Processing time: # (ms)"),
        ("Sum = 12.5", None, "Sum = 12.5"),
        ("20, 1, 0, 0.012, inf, 3.5, nan", "numbers", "#, #, #, #, #, #, #"),
        ("no information lost", "numbers", "no information lost"),
        ("20, 1, 0, 0.012, inf, 3.5", "floats", "20, 1, 0, #, #, #"),
        ("OS_System_Type.release = 6.8.0-45-generic", "uname", "OS_System_Type.release = #"),
        ("OS Info: <#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)>", "uname", "OS Info: #"),
        ("simpleAssert starting...", "uname", "simpleAssert starting..."),
        ("Device assert failed as expected, CUDA error message is: device-side assert triggered", "uname",
         "Device assert failed as expected, CUDA error message is: device-side assert triggered"),
    ]
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".out") as f:
        f.write("[3, 1]:\t\tValue is:10\ntime: 5 ms\n[3, 0]:\t\tValue is:10\n")
        f.flush()
        got = normalized_lines(f.name, mask_arg("sorted"))
    if got != ["[3, 0]:\t\tValue is:10\n", "[3, 1]:\t\tValue is:10\n"]:
        print(f"self-test FAILED: the sorted mask gave {got!r}")
        sys.exit(1)
    for raw, mask, want in cases:
        got = normalize(raw, mask)
        if got != want:
            print(f"self-test FAILED: {raw!r} with mask {mask}: {got!r}, want {want!r}")
            sys.exit(1)
    print(f"self-test ok: {len(cases)} lines")


def normalized_lines(path, mask):
    with open(path, errors="replace") as f:
        lines = [line + "\n" for line in (normalize(raw, mask) for raw in f) if line is not None]
    return sorted(lines) if mask == "sorted" else lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mask", type=mask_arg, default=None)
    ap.add_argument("--write", action="store_true", help="write FILE.norm beside each FILE")
    ap.add_argument("--self-test", action="store_true", help="check the masks on known lines, then exit")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    if not args.files:
        ap.error("no FILE")
    if not args.write:
        for path in args.files:
            sys.stdout.writelines(normalized_lines(path, args.mask))
        return
    for path in args.files:
        target = (path[:-4] if path.endswith(".out") else path) + ".norm"
        try:
            lines = list(normalized_lines(path, args.mask))
        except OSError as e:
            print(f"{path}: {e}", file=sys.stderr)
            continue
        with open(target, "w") as out:
            out.writelines(lines)


if __name__ == "__main__":
    main()
