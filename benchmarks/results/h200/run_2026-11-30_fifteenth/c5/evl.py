"""Fifteenth session diagnostic (not shipped): the evict_last timing test's measurement in a fresh
process, with a pre-warm of --prewarm ms of back-to-back reads before the rounds, and with the
persisting-L2 reset on or (monkeypatched away) off; five rounds, every ratio printed."""
import argparse, json, sys
from pathlib import Path

import torch

from smemkit.runtime import timing
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule

ap = argparse.ArgumentParser(); ap.add_argument("--prewarm", type=float); ap.add_argument("--reset", type=int)
ap.add_argument("--out")
a = ap.parse_args()
if not a.reset:
    timing._reset_persisting_l2 = lambda: None
module = KernelModule((Path("tests/gpu/kernels/l2_keep_read.cu")).read_text(), "l2_keep_read")
x = torch.randn(8 << 20, device="cuda")
sink = torch.zeros(1, device="cuda")


def read(name):
    module.function(name, ("ptr", "i64", "ptr")).launch(gpu_info(0).sm_count * 8, 256, x, x.numel() // 4, sink)


def after(first):
    read(first)
    return timing.time_gpu(lambda: read("read_plain"), warmup=0, reps=30, flush_l2=True).median_ms


after("read_plain")
if a.prewarm:
    timing.time_gpu(lambda: read("read_plain"), warmup=0, reps=5, flush_l2=True, warm_ms=a.prewarm)
rounds = []
for _ in range(5):
    k = after("read_keep"); p = after("read_plain")
    rounds.append({"after_keep_ms": k, "after_plain_ms": p, "ratio": k / p, "mhz": torch.cuda.clock_rate()})
ratios = sorted(r["ratio"] for r in rounds)
plain = " ".join(f"{1e3 * r['after_plain_ms']:.1f}" for r in rounds)
print(f"prewarm {a.prewarm:6.0f} reset {a.reset} ratios {' '.join(f'{q:.3f}' for q in ratios)} "
      f"median {ratios[2]:.3f} plain_us {plain}", flush=True)
json.dump({"prewarm_ms": a.prewarm, "reset": a.reset, "rounds": rounds}, open(a.out, "w"), indent=1)
