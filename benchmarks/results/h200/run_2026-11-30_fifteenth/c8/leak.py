"""Fifteenth session driver (experiment, not shipped): without any persisting-L2 reset, do lines an
earlier kernel kept with evict_last make a later, L2-flushed timing on the same data faster?
Each probe is timed right after a 'keeper' kernel that ran either on the SAME buffers (a leak can
hit) or on a CLONE at other addresses (a leak cannot hit); alternating, several rounds, timed as
the benchmarks time (time_gpu, flush_l2, graph replays and launches, the faster median).
  read:  probe = plain read of 32 MB; keeper = evict_last read (tests/gpu/kernels/l2_keep_read.cu)
  lars8K: probe = regs_t512 and torch.compile; keeper = reread_l2_t512_rows (evict_last rows)
  lars4K: probe = regs_t256 and torch.compile; keeper = reread_t512"""
import argparse, json, statistics
from pathlib import Path

import torch

from smemkit.reduction import BUILTIN, run
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime import timing
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule

ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=6)
a = ap.parse_args()
timing._reset_persisting_l2 = lambda: None  # never reset (this tree's timing may still have it)
spec = BUILTIN["lars"]
torch._dynamo.config.cache_size_limit = 64
compiled = torch.compile(EAGER["lars"], dynamic=False)
mod = KernelModule(Path("tests/gpu/kernels/l2_keep_read.cu").read_text(), "l2_keep_read")
rd = {n: mod.function(n, ("ptr", "i64", "ptr")) for n in ("read_plain", "read_keep")}
sink = torch.zeros(1, device="cuda")
grid = gpu_info(0).sm_count * 8


def t(fn):
    flush = timing._l2_flusher()
    g = timing._time(fn, 3, 30, True, flush, timing.WARM_MS)
    l = timing._time(fn, 3, 30, False, flush, timing.WARM_MS)
    return min(g.median_ms, l.median_ms)


cases = []
x = torch.randn(8 << 20, device="cuda"); x2 = x.clone()
cases.append(("read", lambda b: rd["read_keep"].launch(grid, 256, b, b.numel() // 4, sink), (x, x2),
              {"read_plain": lambda: rd["read_plain"].launch(grid, 256, x, x.numel() // 4, sink)}))
for N, keeper, probes in ((8192, "reread_l2_t512_rows", ("regs_t512",)), (4096, "reread_t512", ("regs_t256",))):
    T, S = example_inputs("lars", 4096, N, device="cuda")
    T2 = {k: v.clone() for k, v in T.items()}
    pr = {p: (lambda p=p, T=T, S=S: run(spec, T, S, variant=p)) for p in probes}
    pr["compile"] = lambda T=T, S=S: compiled(T, S)
    cases.append((f"lars{N // 1024}K", lambda b, S=S, k=keeper: run(spec, b, S, variant=k), (T, T2), pr))
res = []
for name, keep, (same, other), probes in cases:
    for p, fn in probes.items():
        fn(); keep(same); torch.cuda.synchronize()
        vals = {"same": [], "clone": []}
        for r in range(a.rounds):
            for which in (("same", "clone") if r % 2 == 0 else ("clone", "same")):
                keep(same if which == "same" else other)
                vals[which].append(t(fn))
        ms = {k: statistics.median(v) for k, v in vals.items()}
        res.append({"case": name, "probe": p, "same_ms": ms["same"], "clone_ms": ms["clone"],
                    "ratio_same_over_clone": ms["same"] / ms["clone"], "rounds": vals})
        print(f"{name:7s} {p:12s} after keeper on same {ms['same']*1e3:8.2f} us, on clone {ms['clone']*1e3:8.2f} us,"
              f" ratio {ms['same']/ms['clone']:.4f}  per round "
              + " ".join(f"{s/c:.3f}" for s, c in zip(vals['same'], vals['clone'])), flush=True)
json.dump(res, open(a.out, "w"), indent=1)
