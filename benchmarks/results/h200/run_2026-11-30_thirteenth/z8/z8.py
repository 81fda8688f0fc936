"""Thirteenth session, call 8: in offload_ops the persisting-L2 reset makes the ring ~3 % slower
(z6), in isolation not at all (z7). Rebuild one benchmark point (8192x28672, batch 1 and 512,
r = 0.25) as offload_ops does (full-weight HBM copy, UVA view, both batches' inputs), then time the
ring with / without the reset right after timing each other method, twice."""
import json, sys
import torch
import torch.nn.functional as F
import smemkit.runtime.timing as timing
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight

real_reset = timing._reset_persisting_l2


def t(fn, reset=True):
    timing._reset_persisting_l2 = real_reset if reset else torch.cuda.synchronize
    try:
        return timing.time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True).median_ms
    finally:
        timing._reset_persisting_l2 = real_reset


n, k = 8192, 28672
w = (torch.randn(n, k, device="cuda") * 0.02).to(torch.bfloat16)
w_copy = w.clone()
xs = {b: torch.randn(b, k, device="cuda", dtype=torch.bfloat16) for b in (1, 512)}
sw = SplitWeight(w, 0.25)
view = sw.host_cuda_view()
res = []
for b in (1, 512):
    x = xs[b]
    methods = {
        "cublas_hbm": lambda: F.linear(x, w),
        "uva": lambda: torch.cat([F.linear(x, sw.hbm), F.linear(x, view)], dim=1),
        "copy_then_cublas": lambda: (w_copy[sw.n_hbm:].copy_(sw.host, non_blocking=True), F.linear(x, w_copy)),
        "kernel_path": lambda: split_linear(x, sw, path="kernel"),
        "none": None,
    }
    if b > 64:
        del methods["kernel_path"]
    ring = lambda: split_linear(x, sw, path="ring")  # noqa: E731
    for rnd in range(2):
        for before, fn in methods.items():
            for mode in (True, False) if rnd == 0 else (False, True):
                if fn is not None:
                    t(fn, True)
                ms = t(ring, mode)
                res.append({"batch": b, "round": rnd, "before": before, "reset": mode, "ring_ms": ms})
                print(f"b{b} round {rnd} after {before:18s} reset={mode!s:5s} ring {ms*1e3:8.1f} us", flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
