"""Thirteenth session, call 7: how does timing's persisting-L2 reset slow the ring path by ~3 %
(z6: main without the reset matches b7aaa3f)? In one process, interleaved 3 times: the ring at two
points, a chunked H2D copy on a side stream, one whole H2D copy and an HBM-only mm, each timed
with the reset (as main) and without it (the reset replaced by a synchronize)."""
import json, sys
import torch
import smemkit.runtime.timing as timing
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight

real_reset = timing._reset_persisting_l2


def t(fn, reset):
    timing._reset_persisting_l2 = real_reset if reset else torch.cuda.synchronize
    try:
        return timing.time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True).median_ms
    finally:
        timing._reset_persisting_l2 = real_reset


dev = torch.device("cuda", 0)
cases = {}
for (n, k, b, r) in ((8192, 28672, 1, 0.25), (4096, 14336, 512, 0.05)):
    g = torch.Generator(device=dev).manual_seed(n)
    w = (torch.randn(n, k, device=dev, generator=g) * 0.02).to(torch.bfloat16)
    x = torch.randn(b, k, device=dev, generator=g).to(torch.bfloat16)
    sw = SplitWeight(w, r)
    out = torch.empty(b, n, device=dev, dtype=torch.bfloat16)
    cases[f"ring {n}x{k} b{b} r{r}"] = (lambda x=x, sw=sw, out=out: split_linear(x, sw, path="ring", out=out))
    cases[f"hbm mm {n}x{k} b{b} r{r}"] = (lambda x=x, sw=sw, out=out: torch.mm(x, sw.hbm.t(), out=out[:, :sw.n_hbm]))
    host = sw.host
    dst = torch.empty_like(host, device=dev)
    side = torch.cuda.Stream()
    chunk = (8 << 20) // (k * 2)

    def chunked(host=host, dst=dst, side=side, chunk=chunk):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(0, host.shape[0], chunk):
                dst[i:i + chunk].copy_(host[i:i + chunk], non_blocking=True)
        torch.cuda.current_stream().wait_stream(side)
    cases[f"chunked copy {n}x{k} r{r}"] = chunked
    cases[f"whole copy {n}x{k} r{r}"] = (lambda host=host, dst=dst: dst.copy_(host, non_blocking=True))
    del w
res = {name: {"reset": [], "noreset": []} for name in cases}
for rnd in range(3):
    for name, fn in cases.items():
        for mode in (("reset", "noreset") if rnd % 2 == 0 else ("noreset", "reset")):
            res[name][mode].append(t(fn, mode == "reset"))
json.dump(res, open(sys.argv[1], "w"), indent=1)
for name, d in res.items():
    a = sorted(d["reset"]); b = sorted(d["noreset"])
    print(f"{name:40s} reset {' '.join(f'{v*1e3:8.1f}' for v in d['reset'])} | noreset {' '.join(f'{v*1e3:8.1f}' for v in d['noreset'])} | ratio {a[1]/b[1]:.3f}")
