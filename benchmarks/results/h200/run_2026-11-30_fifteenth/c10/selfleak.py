"""Fifteenth session driver (experiment, not shipped): do kernels that load with evict_last
(torch.compile's, Triton's, smemkit's re-read kernels) find their own lines of the previous
repetition in L2 through the benchmark's L2 flush? runtime.timing resets the persisting lines once
per timed loop, not per repetition. Graph replays, L2 flushed before each repetition, arms:
  loop      as runtime.timing: one reset before the loop, nothing between repetitions
  rep_sync  a synchronisation before each repetition's flush (no reset)
  rep_reset a synchronisation and the reset before each repetition's flush
rep_reset / rep_sync is the self-leak (same idle gaps). Rotated rounds."""
import argparse, json, statistics

import torch

from smemkit.reduction import BUILTIN, run
from smemkit.reduction.eager import EAGER
from smemkit.reduction.triton_kernels import TRITON
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime import timing

ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
torch._dynamo.config.cache_size_limit = 64
POINTS = [("lars", 4096, ["regs_t256"]), ("lars", 8192, ["reread_l2_t512_rows", "regs_t512"]),
          ("pearson_bwd", 4096, ["regs_t256"]), ("softmax_bwd", 8192, ["regs_t512"]),
          ("layernorm_bwd", 4096, ["regs_t256"])]
flush = timing._l2_flusher()


def timed(fn, arm, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    timing._reset_persisting_l2()
    timing._keep_busy(g.replay, flush, timing.WARM_MS)
    out = []
    for _ in range(reps):
        if arm != "loop":
            torch.cuda.synchronize()
            if arm == "rep_reset":
                timing._reset_persisting_l2()
        flush()
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); g.replay(); e.record()
        e.synchronize() if arm != "loop" else None
        out.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in out)


res = []
for name, N, ours in POINTS:
    spec = BUILTIN[name]
    M = 2048 if name == "layernorm_bwd" else 4096
    T, S = example_inputs(name, M, N, device="cuda")
    comp = torch.compile(EAGER[name], dynamic=False)
    cands = {"compile": lambda: comp(T, S), "triton": lambda: TRITON[name](T, S)}
    for v in ours:
        cands[v] = lambda v=v: run(spec, T, S, variant=v)
    arms = ("loop", "rep_sync", "rep_reset")
    times = {(c, arm): [] for c in cands for arm in arms}
    keys = list(times)
    for r in range(a.rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for c, arm in (order if r % 2 == 0 else order[::-1]):
            times[(c, arm)].append(timed(cands[c], arm))
    for c in cands:
        med = {arm: statistics.median(times[(c, arm)]) for arm in arms}
        res.append({"workload": name, "N": N, "cand": c, **{f"{k}_ms": v for k, v in med.items()},
                    "selfleak": med["rep_reset"] / med["rep_sync"],
                    "rounds": {arm: times[(c, arm)] for arm in arms}})
        print(f"{name:14s} {N:6d} {c:20s} loop {med['loop']*1e3:8.2f} rep_sync {med['rep_sync']*1e3:8.2f} "
              f"rep_reset {med['rep_reset']*1e3:8.2f}  reset/sync {med['rep_reset']/med['rep_sync']:.4f}", flush=True)
    for arm in arms:
        c0 = statistics.median(times[("compile", arm)])
        print(f"   {arm:9s} " + " ".join(f"{c}/compile={statistics.median(times[(c, arm)]) / c0:.4f}" for c in cands if c != "compile"))
    del T; torch.cuda.empty_cache()
json.dump(res, open(a.out, "w"), indent=1)
