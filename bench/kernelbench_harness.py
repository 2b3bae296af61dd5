#!/usr/bin/env python3
"""KernelBench's own harness on the same work as `crucible rejudge`, for side-by-side figures (issue 14).

Imports `kernelbench.eval.eval_kernel_against_ref` and `kernelbench.timing` from a KernelBench checkout (not in
this repository) and runs them as KernelBench's scripts do: the reference timed by `measure_ref_program_time`
(cuda_event, 100 trials), the candidate by `eval_kernel_against_ref` (5 correctness trials, 100 timed), the
speedup being the ratio of the two means. Every evaluation is timed on the wall clock, inside one long-lived
process (KernelBench's best case: its scripts start a process per evaluation).

    bench/kernelbench_harness.py aa KB_CHECKOUT --level 1 --ids 19,23 --json OUT.json
    bench/kernelbench_harness.py cudal1 h100.json KB_CHECKOUT --level 1 --ids 19,23 --json OUT.json

`--resume` keeps the rows OUT.json already has (a run cut by a time limit, another session's) and runs the
rest, as `crucible rejudge --resume` does.

`aa` submits each problem's own Model as ModelNew (A/A); `cudal1` CUDA-L1's released kernels (their ref_code
and custom_code). KernelBench's package imports client libraries (openai, litellm, dotenv, tqdm, requests,
pydantic) that evaluation does not use; where one is missing a stand-in module takes its place.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
import types


def stand_in(name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules[name] = mod


class _Model:
    """pydantic.BaseModel's part KernelBench uses: fields with class defaults, set by keyword."""

    def __init__(self, **kw):
        for cls in reversed(type(self).__mro__):
            for k in getattr(cls, "__annotations__", {}):
                if hasattr(cls, k):
                    v = getattr(cls, k)
                    setattr(self, k, dict(v) if isinstance(v, dict) else v)
        for k, v in kw.items():
            setattr(self, k, v)

    def model_dump(self):
        return dict(self.__dict__)

    dict = model_dump


def import_kernelbench(checkout):
    import importlib.util

    missing = {
        "openai": dict(OpenAI=object),
        "litellm": dict(completion=None),
        "dotenv": dict(load_dotenv=lambda *a, **k: None),
        "tqdm": dict(tqdm=lambda it=None, *a, **k: it),
        "requests": dict(get=None),
        "pydantic": dict(BaseModel=_Model),
    }
    for name, attrs in missing.items():
        if importlib.util.find_spec(name) is None:
            stand_in(name, **attrs)
    sys.path.insert(0, os.path.join(checkout, "src"))
    from kernelbench import eval as kb_eval
    from kernelbench import timing as kb_timing

    return kb_eval, kb_timing


def problems_of(checkout, level, ids):
    folder = os.path.join(checkout, "KernelBench", f"level{level}")
    out = []
    for f in sorted(os.listdir(folder), key=lambda n: int(n.split("_")[0]) if n[0].isdigit() else 1 << 30):
        if not f.endswith(".py") or not f[0].isdigit():
            continue
        pid = int(f.split("_")[0])
        if ids and pid not in ids:
            continue
        src = open(os.path.join(folder, f)).read()
        out.append(dict(level=level, id=pid, name=f[:-3], ref=src, new=src + "\n\nModelNew = Model\n", claimed=None))
    return out


def cudal1_records(path, checkout, level, ids):
    names = {}
    folder = os.path.join(checkout, "KernelBench", f"level{level}")
    if os.path.isdir(folder):
        for f in os.listdir(folder):
            if f[0].isdigit() and f.endswith(".py"):
                names[int(f.split("_")[0])] = f[:-3]
    out = []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if r.get("level_id") != level or (ids and r.get("task_id") not in ids) or not r.get("custom_code"):
            continue
        pid = r["task_id"]
        out.append(dict(level=level, id=pid, name=names.get(pid, f"{pid}"), ref=r["ref_code"], new=r["custom_code"],
                        claimed=r.get("score_default")))
    return out


def run(items, kb_eval, kb_timing, device, after_row=lambda rows: None):
    import torch

    rows = []
    for i, it in enumerate(items):
        row = dict(level=it["level"], id=it["id"], name=it["name"], claimed=it["claimed"])
        t0 = time.perf_counter()
        ref = kb_timing.measure_ref_program_time(it["name"], it["ref"], num_trials=100, device=device)
        t1 = time.perf_counter()
        build_dir = tempfile.mkdtemp(prefix="kb-harness-")
        try:
            res = kb_eval.eval_kernel_against_ref(it["ref"], it["new"], num_correct_trials=5, num_perf_trials=100,
                                                  measure_performance=True, build_dir=build_dir, device=device)
        except Exception as e:  # KernelBench raises for some candidates; a row says so
            res = None
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        t2 = time.perf_counter()
        row["ref_timing_s"] = round(t1 - t0, 2)
        row["eval_s"] = round(t2 - t1, 2)
        if ref:
            row["ref_ms"] = ref["mean"]
        if res is not None:
            row["compiled"] = bool(getattr(res, "compiled", False))
            row["correct"] = bool(getattr(res, "correctness", False))
            if not row["correct"]:
                # Why, in KernelBench's own words (an output mismatch with its max difference, a runtime error):
                # a verdict that differs from Crucible's is explained by it, not guessed at.
                meta = getattr(res, "metadata", None) or {}
                row["issue"] = "; ".join(f"{k}: {v}" for k, v in sorted(meta.items())
                                         if k not in ("hardware", "device"))[:400]
            rt = getattr(res, "runtime", -1.0)
            if row["correct"] and rt and rt > 0 and ref:
                row["new_ms"] = rt
                row["speedup"] = ref["mean"] / rt
        rows.append(row)
        print(f"[{i + 1}/{len(items)}] {it['name']}: correct={row.get('correct')} "
              f"speedup={row.get('speedup', float('nan')):.3f} eval {row['eval_s']} s", file=sys.stderr, flush=True)
        after_row(rows)
        torch.cuda.empty_cache()
    return rows


def merged_rows(kept, rows):
    """A resumed report: every kept row and every one run (which wins), in (level, id) order; kept rows
    outside this run's --ids stay."""
    merged = {(r["level"], r["id"]): r for r in kept}
    merged.update({(r["level"], r["id"]): r for r in rows})
    return [merged[k] for k in sorted(merged)]


def summary(rows, aa):
    sp = [r["speedup"] for r in rows if "speedup" in r]
    evals = [r["eval_s"] for r in rows]
    s = dict(kernels=len(rows), correct=sum(1 for r in rows if r.get("correct")),
             eval_s_median=statistics.median(evals) if evals else None,
             eval_s_min=min(evals) if evals else None, eval_s_max=max(evals) if evals else None,
             evals_per_minute=60 * len(evals) / sum(evals) if evals and sum(evals) > 0 else None)
    if sp:
        s["speedup_mean"] = statistics.mean(sp)
        s["speedup_median"] = statistics.median(sp)
        s["speedup_geomean"] = math.exp(statistics.mean(math.log(x) for x in sp))
        if aa:
            dev = [abs(x - 1) for x in sp]
            s["aa_mean_abs_dev"] = statistics.mean(dev)
            s["aa_max_abs_dev"] = max(dev)
            s["aa_stdev"] = statistics.pstdev(sp)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["aa", "cudal1"])
    ap.add_argument("paths", nargs="+", help="aa: KB_CHECKOUT; cudal1: RELEASE.json KB_CHECKOUT")
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--ids", default="", help="comma-separated problem ids (default: all)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json", default="")
    ap.add_argument("--resume", action="store_true", help="keep the rows --json has; run the others")
    a = ap.parse_args()
    if a.resume and not a.json:
        ap.error("--resume needs --json FILE, the report it goes on from")
    ids = {int(x) for x in a.ids.split(",") if x}
    checkout = a.paths[-1]
    kb_eval, kb_timing = import_kernelbench(checkout)
    items = problems_of(checkout, a.level, ids) if a.mode == "aa" else cudal1_records(a.paths[0], checkout, a.level, ids)
    aa = a.mode == "aa"
    kept = []
    if a.resume and os.path.exists(a.json):
        with open(a.json) as f:
            kept = json.load(f).get("rows", [])
    done = {(r["level"], r["id"]) for r in kept}
    todo = [it for it in items if (it["level"], it["id"]) not in done]
    if kept:
        print(f"resuming {a.json}: {len(kept)} rows kept, {len(todo)} to run", file=sys.stderr, flush=True)

    def report(rows):
        return merged_rows(kept, rows)

    def write(rows, partial):
        # Rewritten after every row, as crucible rejudge does: a time limit cuts the run, not its report.
        if a.json:
            tmp = a.json + ".part"
            with open(tmp, "w") as f:
                json.dump(dict(rows=report(rows), summary=summary(report(rows), aa), partial=partial), f, indent=1)
            os.replace(tmp, a.json)

    rows = report(run(todo, kb_eval, kb_timing, a.device, lambda rows: write(rows, len(rows) < len(todo))))
    s = summary(rows, aa)
    print(f"| problem | ref ms | new ms | speedup | eval s |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r.get('ref_ms', '-')} | {r.get('new_ms', '-')} | "
              f"{('%.3f' % r['speedup']) if 'speedup' in r else r.get('error', 'incorrect')[:60]} | {r['eval_s']} |")
    print(json.dumps(s, indent=1))
    write(rows, False)


if __name__ == "__main__":
    main()
