"""Concurrent path vs kernel/ring, eager and CUDA graph, a few points (experiment driver)."""
import json, sys
import torch
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu
out = sys.argv[1]; recs = []
for n, k in ((4096, 14336), (14336, 4096)):
    w = (torch.randn(n, k, device="cuda") * k ** -0.5).to(torch.bfloat16)
    for r in (0.0128, 0.035, 0.05):
        with SplitWeight(w, r) as sw:
            for b in (1, 8, 64):
                x = torch.randn(b, k, device="cuda", dtype=torch.bfloat16)
                line = []
                for path in ("kernel", "ring", "concurrent"):
                    for graph in (False, True):
                        fn = lambda: split_linear(x, sw, path=path)
                        t = time_gpu(fn, warmup=3, reps=20, graph=graph, flush_l2=True)
                        recs.append({"shape": [n, k], "r": r, "batch": b, "path": path, "graph": graph, "ms": t.median_ms})
                        line.append(f"{path[:4]}{'G' if graph else 'E'}={t.median_ms * 1e3:.0f}")
                print(f"{n}x{k} r={r} B={b}: " + " ".join(line), flush=True)
    del w
json.dump(recs, open(out, "w"), indent=1)
