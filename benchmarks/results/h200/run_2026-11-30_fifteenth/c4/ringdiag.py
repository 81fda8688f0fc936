"""Fifteenth session diagnostic (not shipped): the offload ring (split_linear's ring path) timed as
offload_ops times it, with or without runtime.timing's persisting-L2 reset (--reset 1 / 0), inside
a cudaProfilerApi range for Nsight Systems; prints the median."""
import argparse, json

import torch

from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu

ap = argparse.ArgumentParser(); ap.add_argument("--reset", type=int); ap.add_argument("--out")
a = ap.parse_args()
torch.manual_seed(0)
res = {}
for (n, k), batch, r in (((4096, 14336), 8, 0.1), ((8192, 28672), 512, 0.036)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
    sw = SplitWeight(w, r)
    fn = lambda: split_linear(x, sw)  # noqa: E731
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    t = time_gpu(fn, warmup=3, reps=30, graph=True, flush_l2=True, reset_persisting_l2=bool(a.reset))
    torch.cuda.profiler.stop()
    res[f"{n}x{k}_b{batch}_r{r}"] = t.median_ms
    print(f"{n}x{k} b{batch} r{r} reset={a.reset} median {t.median_ms*1e3:.1f} us", flush=True)
    sw.free(); del w, x
json.dump(res, open(a.out, "w"))
