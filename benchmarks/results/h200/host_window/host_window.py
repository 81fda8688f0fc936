"""A/B: the split kernel's host tier at the points where it leaves host CTAs idle or holds fewer
than the probe's total window (4096x14336 / 14336x4096, r = r*, r_hide, 0.05, 0.1, batch 1 and 8):
host window per CTA 16 KB (the probe's choice) vs 24 / 32 / 48 KB, and 16 vs 24 / 32 host CTAs.
Experiment driver, not shipped: `python host_window.py OUT.json`. CUDA graphs, L2 flushed, median
of 20; outputs checked against float64."""
import json, sys, time
import torch
from smemkit.offload import gemv
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu

SHAPES = [(4096, 14336), (14336, 4096)]
RATIOS = {"r*": 0.0128, "r_hide": 0.036, "0.05": 0.05, "0.1": 0.1}
ARMS = [(16, 16 << 10), (16, 24 << 10), (16, 32 << 10), (24, 16 << 10), (32, 16 << 10)]
recs, t0 = [], time.time()
for n, k in SHAPES:
    w = (torch.randn(n, k, device="cuda") * k ** -0.5).to(torch.bfloat16)
    w64 = w.double()
    for label, r in RATIOS.items():
        sw = SplitWeight(w, r)
        for batch in (1, 8):
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            ref = x.double() @ w64.T
            row = []
            for hc, win in ARMS:
                out = torch.empty(batch, n, device="cuda", dtype=torch.bfloat16)
                fn = lambda: split_linear(x, sw, out=out, path="kernel", host_ctas=hc, host_window=win)
                out.fill_(float("nan")); fn(); torch.cuda.synchronize()
                err = float((out.double() - ref).norm() / ref.norm())
                ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True).median_ms
                plan = gemv.plan_launch(n, k, batch, sw.n_hbm, slots=264, host_ctas=hc,
                                        host_steps=gemv.host_steps_for_window(win))
                recs.append({"shape": [n, k], "batch": batch, "r": label, "host_rows": sw.host_rows,
                             "host_ctas_arg": hc, "host_window": win, "ms": ms, "rel_err": err,
                             "host_gbps": sw.host_rows * k * 2 / (ms * 1e-3) / 1e9,
                             "plan_host_ctas": plan.host_ctas, "plan_units_h": plan.units_h})
                row.append(f"h{hc}w{win >> 10}K={ms * 1e3:.1f}{'' if err < 1e-2 else '!BAD'}(h{plan.host_ctas})")
            print(f"{n}x{k} b{batch} r={label:6s} " + " ".join(row) + f" [{time.time() - t0:.0f}s]", flush=True)
        del sw
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
