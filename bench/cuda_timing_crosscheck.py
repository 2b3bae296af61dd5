#!/usr/bin/env python3
"""An independent measurement of Crucible's CUDA kernel times (issue 3's fidelity check).

Reads the JSON that `cuda_eval_bench fidelity N out.json` writes (artifact path, input and output shapes,
Crucible's median candidate time per task), loads each artifact with ctypes into a PyTorch process, calls
crucible_forward on torch tensors with torch's current stream and cuBLAS handle, and times it with
torch.cuda.Event the way Crucible's protocol does: L2 flushed (a 256 MB buffer zeroed) before every call,
events around the call alone, median of the calls. Prints Crucible's time, this one and their ratio.

    python3 bench/cuda_timing_crosscheck.py out.json [calls]
"""
import ctypes
import json
import statistics
import sys

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


def main():
    entries = json.load(open(sys.argv[1]))
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    dev = torch.device("cuda", 0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    print("| task | Crucible candidate ms | torch.cuda.Event ms | ratio |")
    print("|------|---------------------:|--------------------:|------:|")
    for e in entries:
        lib = ctypes.CDLL(e["artifact"])
        fn = lib.crucible_forward
        fn.restype = ctypes.c_int
        ins = [torch.randn(*i["shape"], device=dev).abs_() + 0.05 for i in e["inputs"]]
        out = torch.empty(e["output_shape"], device=dev)
        io = sum(t.numel() * 4 for t in ins) + out.numel() * 4
        ws = torch.empty(max(256 << 20, 8 * io), dtype=torch.uint8, device=dev)
        arr = (CruTensor * len(ins))(*[view(t) for t in ins])
        o = (CruTensor * 1)(view(out))
        ctx = CruContext(1, 0, torch.cuda.current_stream().cuda_stream, ws.data_ptr(), ws.numel(),
                         torch.cuda.current_blas_handle())
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for k in range(calls + 10):
            flush.zero_()
            start.record()
            rc = fn(ctypes.byref(ctx), arr, len(ins), o, 1)
            end.record()
            torch.cuda.synchronize()
            if rc != 0:
                raise SystemExit(f"{e['task']}: crucible_forward returned {rc}")
            if k >= 10:
                times.append(start.elapsed_time(end))
        t = statistics.median(times)
        print(f"| {e['task']} | {e['candidate_ms']:.4f} | {t:.4f} | {e['candidate_ms'] / t:.3f} |")


if __name__ == "__main__":
    main()
