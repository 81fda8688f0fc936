"""Fifteenth session driver (experiment, not shipped): does runtime.timing's persisting-L2 reset
change what the reduction benchmark measures? One process per mode: 'never' (no reset),
'every' (a reset before every timed loop: the default), 'once' (one reset at the start, then none).
Per process, in rotated rounds: torch.compile and the best shipped non-cluster kernels at lars 4K /
8K, and a graph-timed plain 32 MB read; each timed as time_both_modes does (graph replays and
launches, L2 flushed, the faster median)."""
import argparse, json, statistics
from pathlib import Path

import torch

from smemkit.reduction import BUILTIN, run
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime import timing
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule

ap = argparse.ArgumentParser(); ap.add_argument("--mode"); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=4)
a = ap.parse_args()
reset_each = a.mode == "every"
if a.mode == "once":
    timing._reset_persisting_l2()
spec = BUILTIN["lars"]
torch._dynamo.config.cache_size_limit = 64
compiled = torch.compile(EAGER["lars"], dynamic=False)
module = KernelModule(Path("tests/gpu/kernels/l2_keep_read.cu").read_text(), "l2_keep_read")
buf = torch.randn(8 << 20, device="cuda"); sink = torch.zeros(1, device="cuda")
read = module.function("read_plain", ("ptr", "i64", "ptr"))
cands = {"read32MB": lambda: read.launch(gpu_info(0).sm_count * 8, 256, buf, buf.numel() // 4, sink)}
data = {}
for N in (4096, 8192):
    t, s = example_inputs("lars", 4096, N, device="cuda"); data[N] = (t, s)
    cands[f"compile@{N}"] = lambda t=t, s=s: compiled(t, s)
    for v in (("regs_t256",) if N == 4096 else ("reread_l2_t512_rows", "regs_t512")):
        cands[f"{v}@{N}"] = lambda t=t, s=s, v=v: run(spec, t, s, variant=v)
flush = timing._l2_flusher()


def best(fn):
    g = timing._time(fn, 5, 30, True, flush, timing.WARM_MS, reset_each).median_ms
    l = timing._time(fn, 5, 30, False, flush, timing.WARM_MS, reset_each).median_ms
    return min(g, l), g


names = list(cands)
times = {c: [] for c in names}
for rnd in range(a.rounds):
    order = names[rnd % len(names):] + names[:rnd % len(names)]
    for c in (order if rnd % 2 == 0 else order[::-1]):
        times[c].append(best(cands[c]))
res = {c: {"ms": statistics.median(x[0] for x in v), "graph_ms": statistics.median(x[1] for x in v), "rounds": v}
       for c, v in times.items()}
json.dump({"mode": a.mode, "results": res}, open(a.out, "w"), indent=1)
print(a.mode.ljust(6), " ".join(f"{c}={r['ms']*1e3:.2f}" for c, r in res.items()), flush=True)
for N, pairs in ((4096, ["regs_t256"]), (8192, ["reread_l2_t512_rows", "regs_t512"])):
    for v in pairs:
        print(f"   {a.mode:6s} {v}@{N} / compile@{N} = {res[f'{v}@{N}']['ms'] / res[f'compile@{N}']['ms']:.4f}")
