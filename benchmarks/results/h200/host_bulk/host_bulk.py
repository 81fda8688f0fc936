"""Host-only split GEMV (r = 1): host_stage 1 (ld.global.cs -> registers -> shared) vs 3
(cp.async.bulk straight into shared) vs 2 (prefetch), per host CTAs x window (experiment driver)."""
import json, sys
import torch
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu

out = sys.argv[1]
recs = []
for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
    w = (torch.randn(n, k, device="cuda") * k ** -0.5).to(torch.bfloat16)
    with SplitWeight(w, 1.0) as sw:
        for batch in (1, 8, 64):
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            ref = (x.double() @ w.double().T)
            line = []
            for stage in (1, 2, 3):
                for ctas, win in ((8, 16384), (16, 8192), (16, 16384), (16, 32768)):
                    fn = lambda: split_linear(x, sw, host_ctas=ctas, host_window=win, host_stage=stage, path="kernel")
                    try:
                        y = fn(); torch.cuda.synchronize()
                        err = float((y.double() - ref).norm() / ref.norm())
                        t = time_gpu(fn, warmup=3, reps=15, graph=True)
                        gbps = n * k * 2 / (t.median_ms * 1e-3) / 1e9
                        recs.append({"shape": [n, k], "batch": batch, "host_stage": stage, "host_ctas": ctas,
                                     "host_window": win, "ms": t.median_ms, "weight_gbps": gbps, "rel_err": err})
                        line.append(f"s{stage}/{ctas}x{win // 1024}K={gbps:.1f}")
                    except Exception as e:
                        torch.cuda.synchronize()
                        recs.append({"shape": [n, k], "batch": batch, "host_stage": stage, "host_ctas": ctas,
                                     "host_window": win, "error": str(e)[:300]})
                        line.append(f"s{stage}/{ctas}x{win // 1024}K=ERR")
            print(f"{n}x{k} B={batch}: " + " ".join(line), flush=True)
            json.dump(recs, open(out, "w"), indent=1)
    del w
