#!/usr/bin/env python3
"""An independent measurement of Crucible's CUDA kernel times (issue 3's fidelity check).

Reads the JSON that `cuda_eval_bench fidelity N out.json` writes (artifact path, input and output shapes,
Crucible's median candidate time per task), loads each artifact with ctypes into a PyTorch process, calls
crucible_forward on torch tensors with torch's current stream and cuBLAS handle, and times it with
torch.cuda.Event: L2 flushed (a 256 MB buffer zeroed) before every call, events around the call alone,
median of the calls. Prints Crucible's time, this one and their ratio. Crucible holds its stream while a
call is enqueued (its launch gate); here only the flush (~70 us on an H200) covers the launch, so the two
agree for calls whose host part is shorter than that, and this one reads slower for the others.

    python3 bench/cuda_timing_crosscheck.py out.json [calls]
    python3 bench/cuda_timing_crosscheck.py out.json [calls] --loads N [task,...]

With --loads, where a candidate's time moves from one evaluation to the next it tells the candidate from the
harness: the same buffers with the .so loaded afresh N times (fresh statics: library handles, chosen
algorithms), then one load with N fresh sets of buffers (fresh placement); the CV across each.
"""
import ctypes
import json
import os
import shutil
import statistics
import sys
import tempfile

import torch


class CruTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("stride", ctypes.c_int64 * 8)]


class CruContext(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_int32), ("device", ctypes.c_int32), ("stream", ctypes.c_void_p),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t), ("blas", ctypes.c_void_p)]


def view(t):
    v = CruTensor()
    v.data = t.data_ptr()
    v.dtype = 0  # float32
    v.ndim = t.dim()
    for d in range(t.dim()):
        v.shape[d] = t.size(d)
        v.stride[d] = t.stride(d)
    return v


def setup(e, dev):
    ins = [torch.randn(*i["shape"], device=dev).abs_() + 0.05 for i in e["inputs"]]
    out = torch.empty(e["output_shape"], device=dev)
    io = sum(t.numel() * 4 for t in ins) + out.numel() * 4
    ws = torch.empty(max(256 << 20, 8 * io), dtype=torch.uint8, device=dev)
    arr = (CruTensor * len(ins))(*[view(t) for t in ins])
    o = (CruTensor * 1)(view(out))
    ctx = CruContext(1, 0, torch.cuda.current_stream().cuda_stream, ws.data_ptr(), ws.numel(),
                     torch.cuda.current_blas_handle())
    return (ins, out, ws), arr, o, ctx


def time_calls(fn, ctx, arr, n_in, o, flush, calls, task):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for k in range(calls + 10):
        flush.zero_()
        start.record()
        rc = fn(ctypes.byref(ctx), arr, n_in, o, 1)
        end.record()
        torch.cuda.synchronize()
        if rc != 0:
            raise SystemExit(f"{task}: crucible_forward returned {rc}")
        if k >= 10:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def fresh_copy(path, k):
    # dlopen of a path already loaded returns the same instance: a copy under a new name is a fresh one.
    dst = os.path.join(tempfile.gettempdir(), f"crosscheck-{os.getpid()}-{k}-" + os.path.basename(path))
    shutil.copyfile(path, dst)
    return dst


def cv(xs):
    return statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else 0.0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    loads = 0
    if "--loads" in sys.argv:
        i = sys.argv.index("--loads")
        loads = int(sys.argv[i + 1])
        args = [a for a in args if a != sys.argv[i + 1]]
    entries = json.load(open(args[0]))
    calls = int(args[1]) if len(args) > 1 else 100
    only = set(args[2].split(",")) if len(args) > 2 else None
    dev = torch.device("cuda", 0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    if loads:
        print(f"| task | fresh loads, same buffers: median ms | CV | one load, fresh buffers: median ms | CV |")
        print("|------|------:|-----:|------:|-----:|")
    else:
        print("| task | Crucible candidate ms | torch.cuda.Event ms | ratio |")
        print("|------|---------------------:|--------------------:|------:|")
    for e in entries:
        if only and e["task"] not in only:
            continue
        n_in = len(e["inputs"])
        if not loads:
            fn = ctypes.CDLL(e["artifact"]).crucible_forward
            fn.restype = ctypes.c_int
            keep, arr, o, ctx = setup(e, dev)
            t = time_calls(fn, ctx, arr, n_in, o, flush, calls, e["task"])
            print(f"| {e['task']} | {e['candidate_ms']:.4f} | {t:.4f} | {e['candidate_ms'] / t:.3f} |")
            continue
        keep, arr, o, ctx = setup(e, dev)
        by_load = []
        for k in range(loads):
            fn = ctypes.CDLL(fresh_copy(e["artifact"], k)).crucible_forward
            fn.restype = ctypes.c_int
            by_load.append(time_calls(fn, ctx, arr, n_in, o, flush, calls, e["task"]))
        del keep, arr, o, ctx
        fn = ctypes.CDLL(fresh_copy(e["artifact"], loads)).crucible_forward
        fn.restype = ctypes.c_int
        by_buffers = []
        held = []  # every set stays allocated, so each next one lands elsewhere
        for k in range(loads):
            keep, arr, o, ctx = setup(e, dev)
            held.append(keep)
            by_buffers.append(time_calls(fn, ctx, arr, n_in, o, flush, calls, e["task"]))
        del held
        torch.cuda.empty_cache()
        print(f"| {e['task']} | {statistics.median(by_load):.4f} | {100 * cv(by_load):.2f}% | "
              f"{statistics.median(by_buffers):.4f} | {100 * cv(by_buffers):.2f}% |")

if __name__ == "__main__":
    main()
