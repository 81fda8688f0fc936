"""Fifteenth session driver (experiment, not shipped): issue 5's batch-512 bar ("within 5 % of
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
from smemkit.runtime.timing import time_gpu  # noqa: E402

F_FLOPS = 790e12


def t(fn):
    ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True, reset_persisting_l2=False).median_ms
    return ms, sm_clock_mhz()


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=4)
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
            cands = {"ring": lambda: split_linear(x, sw), "cublas": lambda: F.linear(x, w)}
            times = {c: [] for c in cands}
            for rnd in range(a.rounds):
                for c in (list(cands) if rnd % 2 == 0 else list(cands)[::-1]):
                    times[c].append(t(cands[c]))
            ring = statistics.median(ms for ms, _ in times["ring"])
            cub = statistics.median(ms for ms, _ in times["cublas"])
            per_round = [tr[0] / tc[0] for tr, tc in zip(times["ring"], times["cublas"])]
            recs.append({"shape": [n, k], "batch": 512, "r": label, "r_actual": sw.ratio, "rel_err": err,
                         "ring_ms": ring, "cublas_ms": cub, "ratio": ring / cub, "per_round_ratio": per_round,
                         "rounds": {c: v for c, v in times.items()}})
            print(f"{n}x{k} {label:6s} ring {ring*1e3:7.1f} cublas {cub*1e3:7.1f} -> {ring/cub:.3f} "
                  f"(rounds {' '.join(f'{q:.3f}' for q in per_round)}; MHz "
                  f"{' '.join(str(c) for _, c in times['ring'] + times['cublas'])}) err {err:.1e}", flush=True)
            sw.free()
        del w, x, ref; torch.cuda.empty_cache()
    json.dump({"links": links, "records": recs}, open(a.out, "w"), indent=1)
    print("within 5 %:", sum(r["ratio"] <= 1.05 for r in recs), "of", len(recs))


if __name__ == "__main__":
    main()
