#!/usr/bin/env python3
"""Crucible's and KernelBench's judges on the same kernels, in one table (issue 14's side-by-side figures).

    bench/kernelbench_side_by_side.py CRUCIBLE.json HARNESS.json [--markdown OUT.md]

CRUCIBLE.json is `crucible rejudge --json` (an A/A run or re-judged kernels), HARNESS.json is
`bench/kernelbench_harness.py --json` on the same level and ids. Kernels are matched by (level, id); each row has
both speedups and both wall times, and the summary is over the kernels both judged: the A/A deviation (mean and
largest |speedup - 1|, standard deviation) or the re-judged means, and evaluations per minute. The harness's
time per evaluation counts its reference timing and its evaluation together, as Crucible's row does.
"""
import argparse
import json
import math
import statistics
import sys


def crucible_rows(doc):
    out = {}
    for k in doc.get("kernels", []):
        if not k.get("task_id"):
            continue
        passed = k.get("outcome") == "pass" and k.get("speedup_vs_eager", 0) > 0
        out[(k.get("level"), k["task_id"])] = dict(
            name=k.get("task", ""), outcome=k.get("outcome", ""), speedup=k["speedup_vs_eager"] if passed else None,
            seconds=k.get("seconds"), flags=k.get("flags", []), claimed=(k.get("claimed") or {}).get("eager"))
    return out


def harness_rows(doc):
    out = {}
    for r in doc.get("rows", []):
        secs = (r.get("ref_timing_s") or 0) + (r.get("eval_s") or 0)
        verdict = "correct" if r.get("correct") else ("error" if r.get("error") else "incorrect")
        out[(r.get("level"), r["id"])] = dict(name=r.get("name", ""), outcome=verdict, speedup=r.get("speedup"),
                                              seconds=secs if secs > 0 else None, claimed=r.get("claimed"))
    return out


def stats(speedups, aa):
    if not speedups:
        return {}
    s = dict(n=len(speedups), mean=statistics.mean(speedups), median=statistics.median(speedups),
             geomean=math.exp(statistics.mean(math.log(x) for x in speedups)))
    if aa:
        dev = [abs(x - 1) for x in speedups]
        s.update(mean_abs_dev=statistics.mean(dev), max_abs_dev=max(dev),
                 sd=statistics.stdev(speedups) if len(speedups) > 1 else 0.0)
    return s


def pace(seconds):
    seconds = [x for x in seconds if x]
    if not seconds:
        return {}
    return dict(n=len(seconds), total_s=sum(seconds), median_s=statistics.median(seconds),
                per_minute=60 * len(seconds) / sum(seconds))


def side_by_side(crucible_doc, harness_doc):
    aa = bool(crucible_doc.get("self_check"))
    c, h = crucible_rows(crucible_doc), harness_rows(harness_doc)
    keys = sorted(set(c) | set(h), key=lambda k: (k[0] or 0, k[1]))
    rows = []
    for k in keys:
        a, b = c.get(k), h.get(k)
        rows.append(dict(level=k[0], id=k[1], name=(a or b)["name"], crucible=a, harness=b))
    both = [r for r in rows if r["crucible"] and r["harness"]]
    both_speedups = [r for r in both if r["crucible"]["speedup"] and r["harness"]["speedup"]]
    summary = dict(
        aa=aa, kernels=len(rows), in_both=len(both), both_with_a_speedup=len(both_speedups),
        crucible=stats([r["crucible"]["speedup"] for r in both_speedups], aa),
        harness=stats([r["harness"]["speedup"] for r in both_speedups], aa),
        crucible_pace=pace([r["crucible"]["seconds"] for r in both]),
        harness_pace=pace([r["harness"]["seconds"] for r in both]))
    return rows, summary


def fmt(x, f="%.3f"):
    return "-" if x is None else f % x


def markdown(rows, s, device=""):
    md = "| kernel | Crucible | KernelBench harness | Crucible s | harness s |\n|---|---|---|---|---|\n"
    for r in rows:
        a, b = r["crucible"], r["harness"]
        ca = "-" if not a else (fmt(a["speedup"], "%.3fx") if a["speedup"] else a["outcome"] +
                                (" " + ",".join(a["flags"]) if a["flags"] else ""))
        hb = "-" if not b else (fmt(b["speedup"], "%.3fx") if b["speedup"] else b["outcome"])
        md += f"| {r['name']} | {ca} | {hb} | {fmt(a and a['seconds'], '%.1f')} | {fmt(b and b['seconds'], '%.1f')} |\n"
    md += "\n"
    md += (f"{s['in_both']} of {s['kernels']} kernels judged by both"
           f"{' on ' + device if device else ''}; {s['both_with_a_speedup']} with a speedup from both.\n\n")
    if s["crucible"]:
        if s["aa"]:
            head = "| over the same kernels | mean \\|speedup - 1\\| | largest | sd | mean |"
            cells = lambda st: f"{st['mean_abs_dev']:.4f} | {st['max_abs_dev']:.4f} | {st['sd']:.4f} | {st['mean']:.4f}"
        else:
            head = "| over the same kernels | mean | median | geomean |"
            cells = lambda st: f"{st['mean']:.3f}x | {st['median']:.3f}x | {st['geomean']:.3f}x"
        md += head + " evaluations per minute | median s |\n|" + "---|" * (head.replace("\\|", "").count("|") + 1) + "\n"
        for who, st, p in (("Crucible", s["crucible"], s["crucible_pace"]),
                           ("KernelBench harness", s["harness"], s["harness_pace"])):
            md += f"| {who} | {cells(st)} | {fmt(p.get('per_minute'), '%.2f')} | {fmt(p.get('median_s'), '%.1f')} |\n"
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("crucible_json")
    ap.add_argument("harness_json")
    ap.add_argument("--markdown", default="")
    a = ap.parse_args()
    try:
        with open(a.crucible_json) as f:
            c = json.load(f)
        with open(a.harness_json) as f:
            h = json.load(f)
    except (OSError, ValueError) as e:
        print(f"kernelbench_side_by_side: {e}", file=sys.stderr)
        return 2
    rows, s = side_by_side(c, h)
    md = markdown(rows, s, c.get("device", ""))
    print(md, end="")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
