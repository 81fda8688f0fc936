"""Split GEMV kernel (path='kernel') timings at decode shapes, for an A/B of two source trees run
in two processes on the same GPU (PYTHONPATH selects the tree). Experiment driver, not shipped:
`python gemv_ab.py LABEL OUT.json`. Each point checked against float64 (rel err), CUDA graph,
L2 flushed, median of 30; cuBLAS (F.linear on the whole weight in HBM) timed alongside."""
import json, sys
import torch
import torch.nn.functional as F
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu
import os
from smemkit.offload import gemv
if os.environ.get("GEMV_HBM_MT"):  # experiment: 16-row tiles per warp on the HBM path, per batch tile
    for nt, v in zip((1, 2, 4, 8), [int(v) for v in os.environ["GEMV_HBM_MT"].split(",")]):
        gemv.HBM_MT[nt] = v
        gemv.HBM_ROWS[nt] = gemv.WARPS * gemv.TILE_M * v
    os.environ.setdefault("GEMV_MIN_CTAS", ",".join(str(gemv.MIN_CTAS_PER_SM[nt]) for nt in (1, 2, 4, 8)))
if os.environ.get("GEMV_MIN_CTAS"):  # experiment: more CTAs per SM for the batch tiles
    m = [int(v) for v in os.environ["GEMV_MIN_CTAS"].split(",")]
    base = gemv.defines
    def defines(*args, **kw):
        d = dict(base(*args, **kw), NT_TABLE=1)
        for nt, v in zip((1, 2, 4, 8), m):
            d[f"HBM_MT_NT{nt}"] = gemv.HBM_MT[nt]
            d[f"MIN_CTAS_NT{nt}"] = v
        return d
    gemv.defines = defines

label, out = sys.argv[1], sys.argv[2]
extra = {"hbm_depth": int(os.environ["GEMV_HBM_DEPTH"])} if os.environ.get("GEMV_HBM_DEPTH") else {}
recs = []
for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(n, k, device="cuda", generator=g) * k ** -0.5).to(torch.bfloat16)
    for batch in [int(v) for v in os.environ.get("GEMV_AB_BATCHES", "1,8,64").split(",")]:
        x = torch.randn(batch, k, device="cuda", generator=g).to(torch.bfloat16)
        ref = x.double() @ w.double().T
        tc = time_gpu(lambda: F.linear(x, w), warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        for ratio in [float(v) for v in os.environ.get("GEMV_AB_RATIOS", "0,0.0125,0.05,0.25").split(",")]:
            sw = SplitWeight(w, ratio)
            y = split_linear(x, sw, path="kernel", **extra)
            err = float((y.double() - ref).norm() / ref.norm())
            t = time_gpu(lambda: split_linear(x, sw, path="kernel", **extra), warmup=5, reps=30, graph=True,
                         flush_l2=True).median_ms
            recs.append({"tree": label, "shape": [n, k], "batch": batch, "ratio": ratio, "ms": t,
                         "cublas_ms": tc, "rel_err": err})
            print(f"{label} {n}x{k} b={batch} r={ratio}: {t * 1e3:8.1f} us (cuBLAS {tc * 1e3:6.1f}) err {err:.1e}",
                  flush=True)
            sw.free()
        json.dump(recs, open(out, "w"), indent=1)
