#!/usr/bin/env python3
"""Parses a Prometheus text exposition with the reference client's parser (Debian's
python3-prometheus-client) and prints it as JSON: {family: {"type": T, "samples": [[name, labels, value]]}}.
Exits 1 with the parser's message when the text does not parse."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families

try:
    text = open(sys.argv[1], encoding="utf-8").read()
    out = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = {
            "type": family.type,
            "samples": [[s.name, s.labels, None if math.isnan(s.value) else s.value] for s in family.samples],
        }
except Exception as e:  # the parser raises ValueError (and others) on bad input
    print(f"unparseable exposition: {e}", file=sys.stderr)
    sys.exit(1)
print(json.dumps(out))
