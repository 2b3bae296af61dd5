#!/usr/bin/env python3
"""bench/kernelbench_memory.py on a report written here: the notes read, the evaluations over the plan listed
and counted, a kernel without the note (a refusal before anything was allocated) left out."""
import os
import subprocess
import sys
import tempfile
import json
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SCRIPT = os.path.join(HERE, "..", "..", "bench", "kernelbench_memory.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import kernelbench_memory as km  # noqa: E402


def kernel(task, held=None, planned=None):
    notes = ["seed base 1"]
    if held is not None:
        notes.append(f"memory: the evaluation held at most {held} GiB on the device, planned {planned} GiB")
    return {"task": task, "notes": notes + ["phases_ms: setup 1"]}


REPORT = {"device": "a test GPU", "kernels": [
    kernel("kb2_55_Matmul", 11.39, 0.4219), kernel("kb1_50_conv", 5.301, 5.152), kernel("kb1_2_matmul", 1.0, 2.0),
    kernel("kb1_22_Tanh")]}


class Memory(unittest.TestCase):
    def test_the_notes_are_read_and_the_excess_counted(self):
        rows = km.measured(REPORT)
        self.assertEqual([r[0] for r in rows], ["kb2_55_Matmul", "kb1_50_conv", "kb1_2_matmul"])
        s = km.summary(rows)
        self.assertEqual(s["evaluations"], 3)
        self.assertEqual(s["over_plan"], 2)
        self.assertAlmostEqual(s["largest_excess_gib"], 11.39 - 0.4219)
        self.assertAlmostEqual(s["median_held_over_planned"], 5.301 / 5.152)
        self.assertAlmostEqual(s["largest_held_over_planned"], 11.39 / 0.4219)

    def test_the_command_lists_those_over_the_plan_first(self):
        with tempfile.TemporaryDirectory() as d:
            path, md = os.path.join(d, "aa.json"), os.path.join(d, "memory.md")
            with open(path, "w") as f:
                json.dump(REPORT, f)
            out = subprocess.run([sys.executable, SCRIPT, path, "--markdown", md], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = [l for l in out.stdout.splitlines() if l.startswith("| kb")]
            self.assertEqual([l.split(" | ")[0] for l in lines], ["| kb2_55_Matmul", "| kb1_50_conv"])
            self.assertIn("2 of 3 evaluations held more than planned", out.stdout)
            with open(md) as f:
                self.assertEqual(f.read(), out.stdout)
            every = subprocess.run([sys.executable, SCRIPT, path, "--all"], capture_output=True, text=True)
            self.assertIn("| kb1_2_matmul | 1.000 | 2.000 | 0.50 |", every.stdout)


if __name__ == "__main__":
    unittest.main()
