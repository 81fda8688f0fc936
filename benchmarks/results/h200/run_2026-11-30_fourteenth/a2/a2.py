"""Fourteenth session, call 2 (experiment driver, not shipped): does the HBM/host boundary's
alignment lift the ring at the large shapes? The thirteenth session (z3, hbm_mm) found cuBLAS on the
HBM rows alone 4-14 % slower than on the whole weight at 8192x28672 / 28672x8192 (n_hbm 8096 /
28320 at r*). Per shape, batch in {64, 512}, r in {r*, r_hide, 0.05}, boundary tile in {16 (now),
64, 128, 256}: the ring path (split_linear path="ring"), cuBLAS on the HBM rows into the strided
output columns and into a contiguous buffer, all-HBM F.linear; ideal from the realized ratio.
Outputs poisoned, ring checked against float64; time_gpu as offload_ops times (graph, L2 flushed, warm-up, median, no persisting-L2 reset)."""
import argparse, json

import torch
import torch.nn.functional as F

from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.timing import time_gpu

B_H, B_G, F_FLOPS = 53.1e9, 4.287e12, 790e12  # thirteenth session z1 (B_h, B_g), eighth session F
R_STAR = B_H / (B_H + B_G)


def t(fn):
    return time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True, reset_persisting_l2=False).median_ms  # as offload_ops (no reset: a5/a6)


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out", required=True); a = ap.parse_args()
    dev = torch.device("cuda", 0)
    recs = []
    for n, k in ((8192, 28672), (28672, 8192), (4096, 14336), (14336, 4096)):
        g = torch.Generator(device=dev).manual_seed(n + k)
        w = (torch.randn(n, k, device=dev, generator=g) * 0.02).to(torch.bfloat16)
        wbytes = n * k * 2
        for batch in (64, 512):
            x = torch.randn(batch, k, device=dev, generator=g).to(torch.bfloat16)
            want = x.double() @ w.double().t()
            full = t(lambda: F.linear(x, w))
            flops = 2.0 * batch * n * k
            for rname, r in (("r*", R_STAR), ("r_hide", batch / F_FLOPS * B_H), ("0.05", 0.05)):
                for tile in (16, 64, 128, 256):
                    sw = SplitWeight(w, r, tile=tile)
                    out = torch.empty(batch, n, device=dev, dtype=torch.bfloat16)
                    buf = torch.empty(batch, sw.n_hbm, device=dev, dtype=torch.bfloat16)
                    ring = lambda: split_linear(x, sw, path="ring", out=out)  # noqa: E731
                    out.fill_(float("nan")); ring(); torch.cuda.synchronize()
                    err = float((out.double() - want).norm() / want.norm())
                    ideal = max(sw.ratio * wbytes / B_H, (1 - sw.ratio) * wbytes / B_G, flops / F_FLOPS) * 1e3
                    rec = {"shape": [n, k], "batch": batch, "r": rname, "tile": tile, "host_rows": sw.host_rows,
                           "n_hbm": sw.n_hbm, "ratio": sw.ratio, "ideal_ms": ideal, "full_ms": full, "ring_err": err,
                           "ring_ms": t(ring),
                           "hbm_mm_strided_ms": t(lambda: torch.mm(x, sw.hbm.t(), out=out[:, :sw.n_hbm])),
                           "hbm_mm_contig_ms": t(lambda: torch.mm(x, sw.hbm.t(), out=buf))}
                    recs.append(rec)
                    print(f"{n}x{k} b{batch:3d} {rname:6s} tile {tile:3d} host {sw.host_rows:4d} | ring {rec['ring_ms']*1e3:7.1f} "
                          f"({rec['ring_ms']/ideal:.3f}x ideal, {rec['ring_ms']/full:.3f}x full) hbm mm strided "
                          f"{rec['hbm_mm_strided_ms']*1e3:7.1f} contig {rec['hbm_mm_contig_ms']*1e3:7.1f} full {full*1e3:7.1f} err {err:.1e}",
                          flush=True)
                    sw.free()
            del x, want
    json.dump(recs, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
