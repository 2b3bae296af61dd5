#!/usr/bin/env python3
"""bench/kernelbench_side_by_side.py on reports written here in the two tools' formats: kernels matched by
level and id, the summary over the kernels both judged, a kernel one side lost shown and left out of it."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SCRIPT = os.path.join(HERE, "..", "..", "bench", "kernelbench_side_by_side.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import kernelbench_side_by_side as sbs  # noqa: E402


def crucible_kernel(tid, outcome, speedup, seconds, flags=()):
    return {"level": 1, "task_id": tid, "task": f"kb1_{tid}_T", "outcome": outcome, "speedup_vs_eager": speedup,
            "seconds": seconds, "flags": list(flags), "claimed": {}}


CRUCIBLE_AA = {"self_check": True, "device": "a test GPU", "kernels": [
    crucible_kernel(1, "pass", 1.01, 20.0), crucible_kernel(2, "pass", 0.97, 40.0),
    crucible_kernel(3, "error", 0.0, 5.0), crucible_kernel(4, "pass", 1.0, 10.0)]}
HARNESS_AA = {"rows": [
    {"level": 1, "id": 1, "name": "1_T", "correct": True, "speedup": 1.02, "ref_timing_s": 1.0, "eval_s": 2.0},
    {"level": 1, "id": 2, "name": "2_T", "correct": True, "speedup": 0.99, "ref_timing_s": 1.0, "eval_s": 5.0},
    {"level": 1, "id": 3, "name": "3_T", "correct": True, "speedup": 1.0, "ref_timing_s": 1.0, "eval_s": 1.0}]}


class SideBySide(unittest.TestCase):
    def test_aa_summary_is_over_the_kernels_both_timed(self):
        rows, s = sbs.side_by_side(CRUCIBLE_AA, HARNESS_AA)
        self.assertEqual([r["id"] for r in rows], [1, 2, 3, 4])
        self.assertEqual(s["kernels"], 4)
        self.assertEqual(s["in_both"], 3)  # kernel 4: the harness has no row
        self.assertEqual(s["both_with_a_speedup"], 2)  # kernel 3: Crucible's error
        self.assertAlmostEqual(s["crucible"]["mean_abs_dev"], (0.01 + 0.03) / 2)
        self.assertAlmostEqual(s["harness"]["mean_abs_dev"], (0.02 + 0.01) / 2)
        self.assertAlmostEqual(s["harness"]["max_abs_dev"], 0.02)
        # Pace over the three both judged: Crucible 65 s, the harness 3 + 6 + 2 s (reference timing counted).
        self.assertAlmostEqual(s["crucible_pace"]["per_minute"], 60 * 3 / 65)
        self.assertAlmostEqual(s["harness_pace"]["per_minute"], 60 * 3 / 11)
        self.assertAlmostEqual(s["harness_pace"]["median_s"], 3.0)

    def test_a_hack_shows_its_flags_and_the_command_writes_markdown(self):
        doc = {"self_check": False, "device": "a test GPU",
               "kernels": [crucible_kernel(19, "hack", 0.0, 30.0, ["input_mutated"]),
                           crucible_kernel(40, "pass", 1.5, 30.0)]}
        harness = {"rows": [
            {"level": 1, "id": 19, "name": "19_ReLU", "correct": True, "speedup": 1.18, "ref_timing_s": 1, "eval_s": 3},
            {"level": 1, "id": 40, "name": "40_LayerNorm", "correct": True, "speedup": 1.4, "ref_timing_s": 1,
             "eval_s": 3}]}
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, doc_ in (("c.json", doc), ("h.json", harness)):
                paths.append(os.path.join(d, name))
                with open(paths[-1], "w") as f:
                    json.dump(doc_, f)
            out_md = os.path.join(d, "out.md")
            p = subprocess.run([sys.executable, SCRIPT, *paths, "--markdown", out_md], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("| kb1_19_T | hack input_mutated | 1.180x | 30.0 | 4.0 |", p.stdout)
            self.assertIn("| Crucible | 1.500x | 1.500x | 1.500x |", p.stdout)
            self.assertIn("| KernelBench harness | 1.400x |", p.stdout)
            with open(out_md) as f:
                self.assertEqual(f.read(), p.stdout)
            bad = subprocess.run([sys.executable, SCRIPT, paths[0], os.path.join(d, "missing.json")],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("missing.json", bad.stderr)


if __name__ == "__main__":
    unittest.main()
