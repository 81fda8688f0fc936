"""Experiment (not shipped): where the split kernel's time at r* goes (470 MB weights, batch 1/8):
the r* launch against its two parts alone (the host rows as an all-host weight; the HBM rows as an
r = 0 weight, both forced onto the kernel), for the shipped HBM role and the HBM_LOAD=1 one, and
a host_ctas x split_h sweep at r*. `python e5.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
sys.path.insert(0, ".branches/s17")
from offload_ops import timed
from smemkit.offload import gemv
from smemkit.offload.pinned import SplitWeight
import e4_lib as T

torch.manual_seed(0)
R_STAR = 0.0128
out = {"records": []}


def rec(**kw):
    out["records"].append(kw)
    print({k: (round(v * 1e3, 1) if k == "ms" else v) for k, v in kw.items()}, flush=True)


for n, k in ((28672, 8192), (8192, 28672)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    sw = SplitWeight(w, R_STAR)
    host_only = SplitWeight(w[sw.n_hbm:].contiguous(), 1.0)
    hbm_only = SplitWeight(w[:sw.n_hbm].contiguous(), 0.0)
    for b in (1, 8):
        x = torch.randn(b, k, device="cuda", dtype=torch.bfloat16)
        for label, weight in (("r*", sw), ("host_part", host_only), ("hbm_part", hbm_only)):
            tm, _ = timed(lambda: gemv.split_linear(x, weight, path="kernel", host_ctas=16, host_window=16384), 20, 3)
            rec(shape=[n, k], b=b, what=label, variant="shipped", ms=tm["ms"])
            if weight.n_hbm:
                for d in (2, 3):
                    tm, _ = timed(lambda d=d: T.tma_linear(x, weight, d)[0], 20, 3)
                    rec(shape=[n, k], b=b, what=label, variant=f"tma{d}", ms=tm["ms"])
        for hc in (8, 16, 24, 32):
            for sh in (1, 2, 3, 4, 6):
                for win in (16384, 32768):
                    try:
                        tm, _ = timed(lambda: gemv.split_linear(x, sw, path="kernel", host_ctas=hc, split_h=sh,
                                                                host_window=win), 20, 3)
                        rec(shape=[n, k], b=b, what="r*_sweep", hc=hc, sh=sh, win=win, ms=tm["ms"])
                    except Exception as e:
                        torch.cuda.synchronize()
                        rec(shape=[n, k], b=b, what="r*_sweep", hc=hc, sh=sh, win=win, error=str(e)[:100])
    for s in (sw, host_only, hbm_only):
        s.free()
    del w
json.dump(out, open(sys.argv[1], "w"), indent=1)
for key in {(tuple(q["shape"]), q["b"]) for q in out["records"]}:
    sweep = [q for q in out["records"] if (tuple(q["shape"]), q["b"]) == key and q["what"] == "r*_sweep" and "ms" in q]
    best = min(sweep, key=lambda q: q["ms"])
    print("best r* sweep", key, round(best["ms"] * 1e3, 1), best["hc"], best["sh"], best["win"])
