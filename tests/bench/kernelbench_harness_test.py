#!/usr/bin/env python3
"""bench/kernelbench_harness.py's resumed report (KernelBench itself is not needed): the rows a report kept
and the rows run, one per problem in (level, id) order, a row run again replacing the kept one."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import kernelbench_harness as harness  # noqa: E402


def row(level, pid, speedup):
    return {"level": level, "id": pid, "name": f"{pid}_T", "correct": True, "speedup": speedup, "eval_s": 1.0}


class ResumedReport(unittest.TestCase):
    def test_keeps_every_kept_row_and_orders_by_problem(self):
        kept = [row(1, 40, 1.0), row(1, 3, 0.99), row(2, 1, 1.01)]
        run = [row(1, 12, 1.02), row(1, 3, 0.98)]
        merged = harness.merged_rows(kept, run)
        self.assertEqual([(r["level"], r["id"]) for r in merged], [(1, 3), (1, 12), (1, 40), (2, 1)])
        self.assertEqual(merged[0]["speedup"], 0.98)  # run again: the new row wins

    def test_summary_counts_the_merged_rows(self):
        s = harness.summary(harness.merged_rows([row(1, 1, 1.01)], [row(1, 2, 0.99)]), aa=True)
        self.assertEqual(s["kernels"], 2)
        self.assertAlmostEqual(s["aa_mean_abs_dev"], 0.01)


if __name__ == "__main__":
    unittest.main()
