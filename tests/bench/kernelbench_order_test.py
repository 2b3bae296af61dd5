#!/usr/bin/env python3
"""bench/kernelbench_order.py on a report written here: the order notes read side by side and place by place
(names with spaces included), a kernel without the note left out, the table and the speedups' line printed,
and the charge rule's share of each speedup's distance from 1 taken out of it."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SCRIPT = os.path.join(HERE, "..", "..", "bench", "kernelbench_order.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import kernelbench_order as ko  # noqa: E402

HEAD = "order: each side's mean time at each place in the trials (1st: right after the fresh draw) against its " \
       "mean over all places: "


CHARGE = "clocks: charged beyond the events, a candidate call {} ms on average (78 calls); the eager " \
         "reference's {} ms under the same rule (74 calls, charged up to the candidate's mean and median charge)"


def kernel(task, speedup, order=None, charge=None):
    notes = ["seed base 1"] + ([HEAD + order] if order else []) + ["phases_ms: setup 1"]
    notes += [CHARGE.format(*charge)] if charge else []
    return {"task": task, "speedup_vs_eager": speedup, "eager_ms": 2.0, "notes": notes}


REPORT = {"device": "a test GPU", "kernels": [
    kernel("kb2_1", 0.9990, charge=("0.0014", "0.0010"), order="eager 2nd +0.040% (37), 3rd -0.040% (37); CUDA graph 2nd +0.020% (37), 3rd -0.020% (37)"),
    kernel("kb2_2", 0.9994, "eager 2nd +0.060% (30), 3rd -0.050% (44); torch.compile reduce-overhead 3rd +0.010% (10), "
                            "4th -0.010% (64)"),
    kernel("kb2_3", 1.0001, charge=("0.001", "0.0008"))]}


class Order(unittest.TestCase):
    def test_a_note_is_read_by_side_and_place(self):
        p = ko.places(HEAD + "candidate 1st -1.139% (4), 2nd +0.455% (10); eager 1st -3.259% (10), 2nd +8.146% (4)")
        self.assertEqual(p, {"candidate": {1: (-1.139, 4), 2: (0.455, 10)},
                             "eager": {1: (-3.259, 10), 2: (8.146, 4)}})
        self.assertEqual(ko.places("memo probe: seen values 1 ms"), {})

    def test_the_kernels_are_gathered_per_side_and_place(self):
        by, kernels = ko.collected(REPORT)
        self.assertEqual(kernels, 2)
        self.assertEqual(by[("eager", 2)], [0.04, 0.06])
        self.assertEqual(by[("torch.compile reduce-overhead", 4)], [-0.01])
        self.assertNotIn(("CUDA graph", 4), by)

    def test_the_charge_rule_is_taken_out_of_each_speedup(self):
        shares = ko.charge_shares(REPORT)
        self.assertEqual(len(shares), 2)  # kb2_2 has no charge note
        (off1, rule1), (off3, rule3) = shares
        self.assertAlmostEqual(off1, 0.0010)
        self.assertAlmostEqual(rule1, 0.0002)  # (0.0014 - 0.0010) ms over 2 ms of eager
        self.assertAlmostEqual(off3, -0.0001)
        self.assertAlmostEqual(rule3, 0.0001)
        self.assertEqual(ko.charge_shares({"kernels": [kernel("kb2_4", None, charge=("0.1", "0"))]}), [])

    def test_the_command_prints_the_table_and_the_speedups(self):
        with tempfile.TemporaryDirectory() as d:
            path, md = os.path.join(d, "aa.json"), os.path.join(d, "order.md")
            with open(path, "w") as f:
                json.dump(REPORT, f)
            out = subprocess.run([sys.executable, SCRIPT, path, "--markdown", md], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("| eager | 2nd | 2 | +0.050% | +0.050% |", out.stdout)
            self.assertIn("Speedups vs eager: median 0.9994, 2 of 3 below 1.", out.stdout)
            self.assertIn("median +0.00045; the charge rule's share median +0.00015; the rest median +0.00030, "
                          "1 of 2 still against the candidate", out.stdout)
            with open(md) as f:
                self.assertEqual(f.read(), out.stdout)


if __name__ == "__main__":
    unittest.main()
