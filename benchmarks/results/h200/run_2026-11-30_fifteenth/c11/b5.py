"""Fifteenth session driver (experiment, not shipped): b1.py with a third arm, the ring whose chunk
GEMM stream has the highest priority (ring_hp), so that the host chunks' skinny GEMMs get SMs as the
all-HBM GEMM's CTAs retire instead of queueing behind them. Issue 5's batch-512 bar ("within 5 % of
all-HBM at r <= r_hide") measured in alternating rounds. Per shape and ratio in {r*, r_hide}: the
ring (split_linear, auto path), cuBLAS on the all-HBM weight, each round in rotated order, timed as
offload_ops times (graph, L2 flushed, no persisting-L2 reset), the SM clock read after each timing.
Outputs checked against float64 first (NaN-poisoned)."""
import argparse, json, statistics, sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from offload_ops import measure_links, random_weight, sm_clock_mhz  # noqa: E402
from smemkit.offload.gemv import split_linear  # noqa: E402
from smemkit.offload.pinned import SplitWeight  # noqa: E402
from smemkit.offload import ring_gemm  # noqa: E402
from smemkit.runtime.timing import time_gpu  # noqa: E402

F_FLOPS = 790e12
HIGH = [False]  # which chunk-GEMM stream every ring hands out (eager rings and the capture ring)
_init = ring_gemm.HostRing.__init__


def _init_with_high(self, device, dtype):
    _init(self, device, dtype)
    self._high = torch.cuda.Stream(device=device, priority=torch.cuda.Stream.priority_range()[1])


ring_gemm.HostRing.__init__ = _init_with_high
ring_gemm.HostRing.gemms = property(lambda self: self._high if HIGH[0] else self._normal,
                                    lambda self, s: setattr(self, "_normal", s))


def t(fn):
    ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True, reset_persisting_l2=False).median_ms
    launch = time_gpu(fn, warmup=3, reps=20, graph=False, flush_l2=True, reset_persisting_l2=False).median_ms
    return ms, sm_clock_mhz(), launch


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    links = measure_links(10)
    b_h = links["B_h_bytes_per_s"]
    recs = []
    for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
        w = random_weight(n, k)
        x = torch.randn(512, k, device="cuda", dtype=torch.bfloat16)
        ref = x.double() @ w.double().T
        for label, r in (("r*", links["r_star"]), ("r_hide", 512 * b_h / F_FLOPS)):
            sw = SplitWeight(w, r)
            out = torch.full((512, n), float("nan"), dtype=torch.bfloat16, device="cuda")
            split_linear(x, sw, out=out)
            err = float((out.double() - ref).norm() / ref.norm())
            def with_priority(high):
                def call():
                    HIGH[0] = high
                    return split_linear(x, sw)
                return call
            cands = {"ring": with_priority(False), "ring_hp": with_priority(True), "cublas": lambda: F.linear(x, w)}
            times = {c: [] for c in cands}
            names = list(cands)
            for rnd in range(a.rounds):
                order = names[rnd % 3:] + names[:rnd % 3]
                for c in (order if rnd % 2 == 0 else order[::-1]):
                    times[c].append(t(cands[c]))
            ring_t = statistics.median(ms for ms, *_ in times["ring"])
            hp = statistics.median(ms for ms, *_ in times["ring_hp"])
            launch = {c: statistics.median(v[2] for v in times[c]) for c in cands}
            cub = statistics.median(ms for ms, *_ in times["cublas"])
            per_round = [tr[0] / tc[0] for tr, tc in zip(times["ring"], times["cublas"])]
            per_round_hp = [tr[0] / tc[0] for tr, tc in zip(times["ring_hp"], times["cublas"])]
            recs.append({"shape": [n, k], "batch": 512, "r": label, "r_actual": sw.ratio, "rel_err": err,
                         "ring_ms": ring_t, "ring_hp_ms": hp, "cublas_ms": cub, "ratio": ring_t / cub,
                         "ratio_hp": hp / cub, "per_round_ratio": per_round, "per_round_ratio_hp": per_round_hp,
                         "launch_ms": launch, "rounds": {c: v for c, v in times.items()}})
            print(f"{n}x{k} {label:6s} ring {ring_t*1e3:7.1f} ring_hp {hp*1e3:7.1f} cublas {cub*1e3:7.1f} -> "
                  f"{ring_t/cub:.3f} / hp {hp/cub:.3f} (hp rounds {' '.join(f'{q:.3f}' for q in per_round_hp)}) "
                  f"launch ring {launch['ring']*1e3:.1f} hp {launch['ring_hp']*1e3:.1f} cublas {launch['cublas']*1e3:.1f} err {err:.1e}", flush=True)
            sw.free()
        del w, x, ref; torch.cuda.empty_cache()
    json.dump({"links": links, "records": recs}, open(a.out, "w"), indent=1)
    print("within 5 %: ring", sum(r["ratio"] <= 1.05 for r in recs), "ring_hp", sum(r["ratio_hp"] <= 1.05 for r in recs),
          "of", len(recs))


if __name__ == "__main__":
    main()
