#!/usr/bin/env python3
"""What each CUDA evaluation held on the device against what the memory plan allowed it, from the notes of a
`crucible rejudge --target cuda` report ("memory: the evaluation held at most X GiB on the device, planned
Y GiB"): a table of the evaluations that held more than planned, and a summary (how many did, by how much),
so that a change to the plan's room is decided on measurements.

    bench/kernelbench_memory.py REPORT.json [--markdown OUT.md] [--all]
"""
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import report_table  # noqa: E402

NOTE = re.compile(r"memory: the evaluation held at most ([0-9.eE+-]+) GiB on the device, planned ([0-9.eE+-]+) GiB")


def measured(doc):
    """(task, held GiB, planned GiB) for each kernel whose notes say both."""
    out = []
    for k in doc.get("kernels", []):
        for n in k.get("notes", []):
            m = NOTE.match(n)
            if m:
                out.append((k.get("task", "?"), float(m.group(1)), float(m.group(2))))
                break
    return out


def summary(rows):
    over = [(t, h, p) for t, h, p in rows if h > p]
    ratios = [h / p for _, h, p in rows if p > 0]
    return dict(evaluations=len(rows), over_plan=len(over),
                largest_excess_gib=max((h - p for _, h, p in over), default=0.0),
                median_held_over_planned=statistics.median(ratios) if ratios else None,
                largest_held_over_planned=max(ratios) if ratios else None)


def markdown(doc, rows, show_all):
    s = summary(rows)
    md = f"Memory held against the plan: {doc.get('device', '?')}\n\n"
    md += "| kernel | held GiB | planned GiB | held / planned |\n|---|---|---|---|\n"
    for t, h, p in sorted(rows, key=lambda r: -(r[1] / r[2] if r[2] > 0 else 0)):
        if show_all or h > p:
            md += f"| {t} | {h:.3f} | {p:.3f} | {h / p if p > 0 else float('inf'):.2f} |\n"
    md += (f"\n{s['over_plan']} of {s['evaluations']} evaluations held more than planned"
           f" (largest excess {s['largest_excess_gib']:.2f} GiB)")
    if s["median_held_over_planned"] is not None:
        md += (f"; held / planned: median {s['median_held_over_planned']:.2f},"
               f" largest {s['largest_held_over_planned']:.2f}")
    return md + ".\n"


def main(argv):
    return report_table.main(
        argv, __doc__.split("\n")[0], lambda doc, a: markdown(doc, measured(doc), a.all),
        lambda ap: ap.add_argument("--all", action="store_true",
                                   help="every evaluation, not only those over the plan"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
