"""Nineteenth session driver (experiment, not shipped): the ring's slot size at the 470 MB layers.
At r_hide (288 / 1024 host rows) and r = 0.05 (416 / 1440 rows) the host part just exceeds one or
two 16 MB slots, so the ring copies it in two chunks and multiplies the last after it lands. Per
point, rotated rounds of the ring with 16, 24 and 32 MB slots (module global, rings rebuilt each
time) and cuBLAS on the dense weight; timed as offload_ops times; checked against float64 first."""
import argparse, json, statistics, sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from offload_ops import measure_links, random_weight, sm_clock_mhz  # noqa: E402
import smemkit.offload.ring_gemm as rg  # noqa: E402
from smemkit.offload.gemv import split_linear  # noqa: E402
from smemkit.offload.pinned import SplitWeight  # noqa: E402
from smemkit.runtime.timing import time_gpu  # noqa: E402

F_FLOPS = 790e12
SLOTS = {"s16": 16 << 20, "s24": 24 << 20, "s32": 32 << 20}


def t(fn):
    ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True, flush_kind="read",
                  reset_persisting_l2=False).median_ms
    return ms, sm_clock_mhz()


def use(slot):
    rg.RING_SLOT_BYTES = slot
    rg.free_rings()


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    links = measure_links(10)
    b_h, b_g = links["B_h_bytes_per_s"], links["B_g_bytes_per_s"]
    recs = []
    for n, k in ((8192, 28672), (28672, 8192)):
        w = random_weight(n, k)
        wbytes = n * k * 2
        xs = {b: torch.randn(b, k, device="cuda", dtype=torch.bfloat16) for b in (1, 8, 64, 512)}
        for label, r in (("r_hide", 512 * b_h / F_FLOPS), ("0.05", 0.05), ("r*", links["r_star"])):
            sw = SplitWeight(w, r)
            for b, x in xs.items():
                ref = x.double() @ w.double().T
                ideal = max(sw.ratio * wbytes / b_h, (1 - sw.ratio) * wbytes / b_g, 2 * b * n * k / F_FLOPS) * 1e3
                cands = {"cublas": (None, lambda x=x: F.linear(x, w))}
                for name, slot in SLOTS.items():
                    cands[name] = (slot, lambda x=x: split_linear(x, sw, path="ring"))
                errs, chunks = {}, {}
                for c, (slot, fn) in cands.items():
                    if slot:
                        use(slot)
                        chunks[c] = rg.host_chunks(sw.host_rows, k, 2)
                    out = fn(); torch.cuda.synchronize()
                    errs[c] = float((out.double() - ref).norm() / ref.norm())
                times = {c: [] for c in cands}
                names = list(cands)
                for rnd in range(a.rounds):
                    order = names[rnd % len(names):] + names[:rnd % len(names)]
                    for c in (order if rnd % 2 == 0 else order[::-1]):
                        slot, fn = cands[c]
                        if slot:
                            use(slot)
                        times[c].append(t(fn))
                med = {c: statistics.median(ms for ms, _ in v) for c, v in times.items()}
                recs.append({"shape": [n, k], "batch": b, "r": label, "host_rows": sw.host_rows, "ideal_ms": ideal,
                             "chunks": chunks, "rel_err": errs, "median_ms": med, "rounds": times})
                print(f"{n}x{k} B={b:3d} {label:6s} host {sw.host_rows:4d} ideal {ideal*1e3:6.1f} "
                      + " ".join(f"{c} {med[c]*1e3:6.1f} ({med[c]/ideal:.3f}, {chunks.get(c, ('',))[0]})" for c in med)
                      + f" maxerr {max(errs.values()):.1e}", flush=True)
            sw.free()
        del w, xs; torch.cuda.empty_cache()
    use(16 << 20)
    json.dump({"links": links, "records": recs}, open(a.out, "w"), indent=1)
    print("\n<= 1.12x ideal:", {c: sum(r["median_ms"][c] <= 1.12 * r["ideal_ms"] for r in recs) for c in SLOTS},
          "of", len(recs))
    print("batch 512 r*/r_hide within 5 % of cuBLAS:",
          {c: sum(r["median_ms"][c] <= 1.05 * r["median_ms"]["cublas"] for r in recs
                  if r["batch"] == 512 and r["r"] != "0.05") for c in SLOTS})


if __name__ == "__main__":
    main()
