#!/usr/bin/env python3
"""The part of a program's output that must be equal between a native run and one through
ivcuda: the output with measurements taken out. On a line that reports a measurement
(time, bandwidth, throughput, performance, or a number with a time unit) every number
becomes '#'; long hexadecimal addresses become 0x#; carriage returns and trailing blanks
go; lines starting `time:`/`info:` (our own programs' convention) are dropped.

usage: normalize_output.py [--mask floats|numbers] FILE   (the result on stdout)
       normalize_output.py [--mask ...] --write FILE...  (each X.out to X.norm, X to X.norm)
  --mask floats   also every number with a decimal point, on every line (a sample that
                  prints bare tables of measurements)
  --mask numbers  every number on every line (only the words remain)"""

import argparse
import re
import sys

MEASUREMENT = re.compile(
    r"\b(time[sdr]?|timing|elapsed|duration|latency|throughput|bandwidth|performance|perf|speed|speedup|"
    r"[gmkt]?flop/?s|[gmkt]?ops|[gmk]b/s|[gmk]bytes/s|[gmk]?numbers/s|megaelements/s|[gmk]?pixels/sec|"
    r"msecs?|ms|millisec(ond)?s?|secs?|seconds?|usecs?|us|µs|ns|fps|per\s+second)\b"
    r"|\d(ms|s|us|ns)\b",
    re.IGNORECASE,
)
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def normalize(line, mask):
    line = line.replace("\r", "").rstrip()
    if line.startswith(("time:", "info:")):
        return None
    line = ADDRESS.sub("0x#", line)
    if mask == "numbers" or MEASUREMENT.search(line):
        return NUMBER.sub("#", line)
    if mask == "floats":
        return FLOAT.sub("#", line)
    return line


def normalized_lines(path, mask):
    with open(path, errors="replace") as f:
        for raw in f:
            line = normalize(raw, mask)
            if line is not None:
                yield line + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mask", choices=["floats", "numbers"], default=None)
    ap.add_argument("--write", action="store_true", help="write FILE.norm beside each FILE")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
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
