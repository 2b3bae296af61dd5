#!/usr/bin/env python3
"""bench/kernelbench_order.py on a report written here: the order notes read side by side and place by place
(names with spaces included), a kernel without the note left out, the table and the speedups' line printed."""
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


def kernel(task, speedup, order=None):
    notes = ["seed base 1"] + ([HEAD + order] if order else []) + ["phases_ms: setup 1"]
    return {"task": task, "speedup_vs_eager": speedup, "notes": notes}


REPORT = {"device": "a test GPU", "kernels": [
    kernel("kb2_1", 0.9990, "eager 2nd +0.040% (37), 3rd -0.040% (37); CUDA graph 2nd +0.020% (37), 3rd -0.020% (37)"),
    kernel("kb2_2", 0.9994, "eager 2nd +0.060% (30), 3rd -0.050% (44); torch.compile reduce-overhead 3rd +0.010% (10), "
                            "4th -0.010% (64)"),
    kernel("kb2_3", 1.0001)]}


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

    def test_the_command_prints_the_table_and_the_speedups(self):
        with tempfile.TemporaryDirectory() as d:
            path, md = os.path.join(d, "aa.json"), os.path.join(d, "order.md")
            with open(path, "w") as f:
                json.dump(REPORT, f)
            out = subprocess.run([sys.executable, SCRIPT, path, "--markdown", md], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("| eager | 2nd | 2 | +0.050% | +0.050% |", out.stdout)
            self.assertIn("Speedups vs eager: median 0.9994, 2 of 3 below 1.", out.stdout)
            with open(md) as f:
                self.assertEqual(f.read(), out.stdout)


if __name__ == "__main__":
    unittest.main()
