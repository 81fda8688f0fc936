"""A/B: the ring path (copy engine + cuBLAS) with at least S steps, S in 1 (shipped), 2, 4, 8,
so that the last host chunk, whose GEMM follows its copy, is small; the split kernel alongside at
batch <= 64. Four weight shapes, batch 1, 8, 64, 512, r = r*, r_hide, 0.05, 0.1. Experiment
driver, not shipped: `python ring_steps.py OUT.json`. CUDA graphs, L2 flushed, median of 20;
outputs checked against float64."""
import json, math, sys, time
import torch
import smemkit.offload.ring_gemm as rg
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu

SHAPES = [(4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)]
RATIOS = {"r*": 0.0128, "r_hide": 0.036, "0.05": 0.05, "0.1": 0.1}
shipped = rg.ring_steps


def at_least(min_steps):
    def steps(n_hbm, host_rows, k, elem_bytes):
        s, chunk, piece = shipped(n_hbm, host_rows, k, elem_bytes)
        if host_rows == 0 or s >= min_steps:
            return s, chunk, piece
        s = max(1, min(min_steps, host_rows // rg.TILE_ROWS))
        return s, rg._tiles(math.ceil(host_rows / s)), rg._tiles(math.ceil(n_hbm / s))
    return steps


recs = []
t0 = time.time()
for n, k in SHAPES:
    w = (torch.randn(n, k, device="cuda") * k ** -0.5).to(torch.bfloat16)
    w64 = w.double()
    for label, r in RATIOS.items():
        sw = SplitWeight(w, r)
        for batch in (1, 8, 64, 512):
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            ref = x.double() @ w64.T
            row = {}
            arms = [("kernel", None)] if batch <= 64 else []
            arms += [(f"ring_s{s}", s) for s in (1, 2, 4, 8)]
            for arm, s in arms:
                rg.ring_steps = shipped if s in (None, 1) else at_least(s)
                path = "kernel" if s is None else "ring"
                out = torch.empty(batch, n, device="cuda", dtype=torch.bfloat16)
                fn = lambda: split_linear(x, sw, out=out, path=path)
                out.fill_(float("nan")); fn(); torch.cuda.synchronize()
                err = float((out.double() - ref).norm() / ref.norm())
                ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True).median_ms
                steps = rg.ring_steps(sw.n_hbm, sw.host_rows, k, 2)[0] if s is not None else None
                rec = {"shape": [n, k], "batch": batch, "r": label, "r_actual": sw.ratio, "host_rows": sw.host_rows,
                       "arm": arm, "steps": steps, "ms": ms, "rel_err": err}
                recs.append(rec)
                row[arm] = f"{ms * 1e3:.1f}{'' if err < 1e-2 else '!BAD'}"
            rg.ring_steps = shipped
            print(f"{n}x{k} b{batch:3d} r={label:6s} " + " ".join(f"{a}={v}" for a, v in row.items())
                  + f" [{time.time() - t0:.0f}s]", flush=True)
        del sw
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
    del w, w64
