"""The command line both note readers of a `crucible rejudge` report share (bench/kernelbench_memory.py,
bench/kernelbench_order.py): read REPORT.json, print a Markdown table made from it, and write it to
--markdown too."""
import argparse
import json
import sys


def main(argv, description, table, more_args=None):
    """`table(doc, args)` makes the Markdown; `more_args(parser)` adds the script's own options."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("report")
    ap.add_argument("--markdown", default="", help="also write the table here")
    if more_args:
        more_args(ap)
    a = ap.parse_args(argv)
    with open(a.report) as f:
        doc = json.load(f)
    md = table(doc, a)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    sys.stdout.write(md)
    return 0
