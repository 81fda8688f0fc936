"""Thirteenth session, call 2 (experiment driver, not shipped): does direct access beat the ring at
batch 512, r <= r_hide (issue 5: within 5 % of all-HBM cuBLAS)? At 4096x14336 and 8192x28672,
bf16, batch 512, r in {r*, r_hide}: all-HBM cuBLAS; the ring path; cuBLAS on the HBM rows with H
SMs carved out (torch._C._set_sm_carveout_experimental); the direct-access host-rows GEMM
(direct_gemm.py: pointer loads, and TMA tensor descriptors over the pinned rows) alone on H programs; and both at once (host GEMM launched first on a
high-priority side stream, then the carved-out cuBLAS; events join them). Outputs poisoned, then
checked against float64; CUDA events, warm-up, median of 30 (runtime.timing)."""
import argparse, json, sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from direct_gemm import host_rows_gemm, host_rows_gemm_tma  # noqa: E402

from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_both_modes

B_H, B_G, F_FLOPS = 54e9, 4.29e12, 790e12  # offload_ops.json (eighth session)
R_STAR = B_H / (B_H + B_G)


def rel_err(got, want):
    return float((got.double() - want).norm() / want.norm())


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out", required=True); a = ap.parse_args()
    dev = torch.device("cuda", 0)
    side = torch.cuda.Stream(device=dev, priority=-1)  # high priority: its CTAs go first
    carve = getattr(torch._C, "_set_sm_carveout_experimental", None)
    recs = []
    for n, k in ((4096, 14336), (8192, 28672)):
        g = torch.Generator(device=dev).manual_seed(n)
        w = (torch.randn(n, k, device=dev, generator=g) * 0.02).to(torch.bfloat16)
        x = torch.randn(512, k, device=dev, generator=g).to(torch.bfloat16)
        want = x.double() @ w.double().t()
        t_full = time_both_modes(lambda: F.linear(x, w), warmup=5, reps=30).best.median_ms
        r_hide = 512 / F_FLOPS * B_H  # C/F x B_h / W for a bf16 weight (2 FLOP and 2 B per element)
        for rname, r in (("r*", R_STAR), ("r_hide", r_hide)):
            sw = SplitWeight(w, r)
            nh, n_hbm = sw.host_rows, sw.n_hbm
            w_host = sw.host_cuda_view()
            out = torch.empty(512, n, device=dev, dtype=torch.bfloat16)
            rec = {"shape": [n, k], "batch": 512, "r": rname, "host_rows": nh, "full_ms": t_full}
            ring = lambda: split_linear(x, sw, path="ring", out=out)  # noqa: E731
            out.fill_(float("nan")); ring(); torch.cuda.synchronize()
            rec["ring_err"] = rel_err(out, want)
            rec["ring_ms"] = time_both_modes(ring, warmup=5, reps=30).best.median_ms
            zero = torch.zeros(n_hbm, device=dev, dtype=torch.bfloat16)
            for impl, gemm in (("ld", host_rows_gemm), ("tma", host_rows_gemm_tma)):
                for H in (2, 4, 8, 16):
                    tag = f"{impl}_H{H}"

                    def cub():  # addmm with a bias: PyTorch's cuBLASLt path, which honours the carveout
                        torch.addmm(zero, x, sw.hbm.t(), out=out[:, :n_hbm])

                    def host(gemm=gemm, H=H):
                        gemm(x, w_host, out[:, n_hbm:], H)

                    def both(host=host):
                        side.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(side):
                            host()
                        cub()
                        torch.cuda.current_stream().wait_stream(side)

                    try:
                        if carve is not None:
                            carve(H)
                        out.fill_(float("nan")); both(); torch.cuda.synchronize()
                        rec[f"{tag}_err"] = rel_err(out, want)
                        if impl == "ld":  # the carved-out cuBLAS alone, once per H
                            rec[f"H{H}_cublas_ms"] = time_both_modes(cub, warmup=5, reps=30).best.median_ms
                        rec[f"{tag}_both_ms"] = time_both_modes(both, warmup=5, reps=30).best.median_ms
                        if carve is not None:
                            carve(None)
                        rec[f"{tag}_host_ms"] = time_both_modes(host, warmup=5, reps=30).best.median_ms
                    except Exception as exc:  # record what failed (an experiment: nothing assumed to work)
                        rec[f"{tag}_error"] = repr(exc)[:300]
                    finally:
                        if carve is not None:
                            carve(None)
            rec["carveout_api"] = carve is not None
            rec["cublas_nocarve_ms"] = time_both_modes(cub, warmup=5, reps=30).best.median_ms
            recs.append(rec)
            cols = " ".join(f"H{H}: cub {rec.get(f'H{H}_cublas_ms', 0)*1e3:.1f} "
                            + " ".join(f"{i} host {rec.get(f'{i}_H{H}_host_ms', 0)*1e3:.1f} both "
                                       f"{rec.get(f'{i}_H{H}_both_ms', 0)*1e3:.1f} ({rec.get(f'{i}_H{H}_both_ms', 0)/t_full:.3f}x)"
                                       for i in ("ld", "tma"))
                            for H in (2, 4, 8, 16))
            print(f"{n}x{k} {rname:6s} rows {nh:4d} full {t_full*1e3:.1f} ring {rec['ring_ms']*1e3:.1f} "
                  f"({rec['ring_ms']/t_full:.3f}x) | {cols}", flush=True)
            sw.free()
    json.dump(recs, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
