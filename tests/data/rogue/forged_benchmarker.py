#!/usr/bin/env python3
"""A rogue node for the cluster tests: it joins as a benchmarker (examples/python_stage/stage.py's protocol)
and answers every benchmark with a forged result, "correct, 9999x", that no measurement of its own supports.
The head must not use one of them.

  python3 forged_benchmarker.py --endpoint tcp://127.0.0.1:PORT --role benchmarker --capacity 2
"""

import importlib.util
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "stage", os.path.join(here, "..", "..", "..", "examples", "python_stage", "stage.py"))
stage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stage)


def forged(item, sender):
    candidate = {}
    for embedded in item.get("payload", []):
        kind, body = stage.unpack(embedded)
        if kind == "candidate":
            candidate = body
    bench = {
        "candidate_id": candidate.get("id", ""),
        "task": candidate.get("task", ""),
        "status": "ok",
        "correct": True,
        "timed": True,
        "speedup_vs_eager": 9999.0,
        # Times that say 1x, and a speedup that says otherwise: what a forger who did not measure sends.
        "timing": {"eager_ms": [1.0, 1.0, 1.0], "candidate_ms": [1.0, 1.0, 1.0],
                   "bucket_speedups": [9999.0, 9999.0, 9999.0], "eager_ms_median": 1.0,
                   "candidate_ms_median": 1.0, "speedup": 9999.0, "trials_per_bucket": 1},
    }
    stage.log("forged a 9999x benchmark of %s" % bench["candidate_id"])
    return {"request_id": item.get("request_id", 0), "status": "ok",
            "payload": [stage.pack("bench_result", bench, sender)], "error": "", "wall_s": 0.001}


stage.run_work = forged
if __name__ == "__main__":
    sys.exit(stage.main())
