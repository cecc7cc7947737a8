#!/usr/bin/env python3
"""Reads a Prometheus text exposition with the Prometheus Python client's own parser
(prometheus_client.parser, Debian's python3-prometheus-client) and checks samples in it.

Why a real parser: ivcuda's metrics are read by Prometheus (node_exporter's textfile collector),
not by our tests; a parser of our own would accept what we write by construction.

usage: metrics_check.py FILE [TYPE:FAMILY ...] [NAME{label="value",...}=NUMBER ...] [NAME{...}>NUMBER ...]
  TYPE:FAMILY                     the family is there with that type (counter, gauge, ...)
  NAME{labels}=N / NAME{labels}>N  exactly one sample of that name carries these labels (and maybe
                                  more), and its value is N / above N
Prints one line per failed check and exits 1 if any failed, else prints "metrics: ok".
"""
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

CHECK = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}(=|>)(-?[0-9.e+]+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')


def main(argv):
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    # the parser is lazy: list() makes it read every line, so a malformed one anywhere fails here
    families = list(text_string_to_metric_families(text))
    types = {f.name: f.type for f in families}
    samples = [s for f in families for s in f.samples]
    failed = 0
    for check in argv[2:]:
        if ":" in check and "{" not in check:
            kind, family = check.split(":", 1)
            if types.get(family) != kind:
                print(f"FAIL {family}: type {types.get(family)}, expected {kind}")
                failed += 1
            continue
        m = CHECK.match(check)
        if not m:
            print(f"FAIL not a check: {check}")
            failed += 1
            continue
        name, labels, op, number = m.group(1), dict(LABEL.findall(m.group(2))), m.group(3), float(m.group(4))
        found = [s for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
        if len(found) != 1:
            print(f"FAIL {check}: {len(found)} samples match")
            failed += 1
        elif (op == "=" and found[0].value != number) or (op == ">" and not found[0].value > number):
            print(f"FAIL {check}: the sample is {found[0].value}")
            failed += 1
    print(f"metrics: {len(families)} families, {len(samples)} samples, {failed} checks failed"
          if failed else "metrics: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
