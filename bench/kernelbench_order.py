#!/usr/bin/env python3
"""What a place in the trials costs, over a `crucible rejudge` report, from each evaluation's order note
("order: ... eager 2nd +0.031% (37), 3rd -0.029% (37); CUDA graph 2nd ..."): per side and place, over the
kernels, the median and mean of its time there against its mean over all places; and the A/A's speedups,
so that a bias against the side that runs first after each draw is read from every run. Beside them, the
share of each speedup's distance from 1 that the charge rule explains ("clocks: charged beyond the events":
the candidate pays all its sub-threshold tail, the reference at most the candidate's mean and median), so
that what is left is read apart from it. Under benchmark.bucket_charge_cap the note's eager figure is what
its calls offered, uncapped: the "share" is then the gap between the two sides' own tails.

    bench/kernelbench_order.py REPORT.json [--markdown OUT.md]
"""
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import report_table  # noqa: E402

PREFIX = "order: "
CHARGE = re.compile(r"^clocks: charged beyond the events, a candidate call ([0-9.e+-]+) ms on average .*"
                    r"the eager reference's ([0-9.e+-]+) ms under the same rule")
SIDES = "over all places: "  # where the header ends and the sides begin
PLACE = re.compile(r"(\d)(?:st|nd|rd|th) ([+-][0-9.]+)% \((\d+)\)")
SIDE = re.compile(r"^(.*?) (?=\d(?:st|nd|rd|th) )")


def places(note):
    """{side: {place: (percent, calls)}} from one order note; {} for another note."""
    if not note.startswith(PREFIX) or SIDES not in note:
        return {}
    out = {}
    for chunk in note.split(SIDES, 1)[1].split("; "):
        m = SIDE.match(chunk)
        if not m:
            continue
        out[m.group(1)] = {int(p): (float(v), int(n)) for p, v, n in PLACE.findall(chunk[m.end():])}
    return out


def collected(doc):
    """{(side, place): [percent per kernel]} over the kernels whose notes have one, and their count."""
    by, kernels = {}, 0
    for k in doc.get("kernels", []):
        for n in k.get("notes", []):
            p = places(n)
            if p:
                kernels += 1
                for side, ps in p.items():
                    for place, (v, _) in ps.items():
                        by.setdefault((side, place), []).append(v)
                break
    return by, kernels


def charge_shares(doc):
    """[(1 - speedup, what the charge rule explains of it)] per kernel with a speedup vs eager and the charge
    note: (the candidate's mean charge - the eager reference's) / the eager time."""
    out = []
    for k in doc.get("kernels", []):
        s, eager = k.get("speedup_vs_eager"), k.get("eager_ms")
        if not s or not eager:
            continue
        for n in k.get("notes", []):
            m = CHARGE.match(n)
            if m:
                out.append((1 - s, (float(m.group(1)) - float(m.group(2))) / eager))
                break
    return out


def ordinal(p):
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(p, f"{p}th")


def markdown(doc, by, kernels):
    md = f"What a place in the trials costs: {doc.get('device', '?')}, {kernels} evaluations with an order note\n\n"
    md += "| side | place | kernels | median | mean |\n|---|---|---|---|---|\n"
    for (side, place), v in sorted(by.items()):
        md += f"| {side} | {ordinal(place)} | {len(v)} | {statistics.median(v):+.3f}% | {statistics.mean(v):+.3f}% |\n"
    sp = [k["speedup_vs_eager"] for k in doc.get("kernels", []) if k.get("speedup_vs_eager")]
    if sp:
        md += (f"\nSpeedups vs eager: median {statistics.median(sp):.4f}, {sum(s < 1 for s in sp)} of {len(sp)}"
               " below 1.\n")
    shares = charge_shares(doc)
    if shares:
        off, rule = [o for o, _ in shares], [r for _, r in shares]
        left = [o - r for o, r in shares]
        md += (f"\nOf 1 - speedup ({len(shares)} kernels with the charge note): median {statistics.median(off):+.5f}; "
               f"the charge rule's share median {statistics.median(rule):+.5f}; the rest median "
               f"{statistics.median(left):+.5f}, {sum(v > 0 for v in left)} of {len(left)} still against the "
               "candidate.\n")
    return md


def main(argv):
    return report_table.main(argv, __doc__.split("\n")[0], lambda doc, a: markdown(doc, *collected(doc)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
