"""Fourteenth session: is torch.mm(out=...) slower than F.linear for the same GEMM, or was a2's gap
(cuBLAS on the HBM rows 344-350 us against F.linear's 301 at 8192x28672 batch 512, also with no
host rows) the order of measurement (clocks under sustained GEMMs)? Batch 512 bf16, four shapes;
candidates timed in rotated order over rounds (each round starts at another candidate), as
offload_ops times them (graph, L2 flushed, no persisting-L2 reset); SM clock read after each."""
import argparse, json, statistics
import torch
import torch.nn.functional as F
from smemkit.runtime.timing import time_gpu


def clock():
    try:
        return torch.cuda.clock_rate()
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=4); a = ap.parse_args()
    torch.manual_seed(0)
    recs = []
    for n, k in ((8192, 28672), (28672, 8192), (4096, 14336), (14336, 4096)):
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
        x = torch.randn(512, k, device="cuda", dtype=torch.bfloat16)
        n_hbm = n - 96 if n % 16 == 0 else n
        big = torch.empty(512, n, device="cuda", dtype=torch.bfloat16)
        buf = torch.empty(512, n, device="cuda", dtype=torch.bfloat16)
        hb = torch.empty(512, n_hbm, device="cuda", dtype=torch.bfloat16)
        wt = w.t()
        wh = w[:n_hbm]
        cands = {
            "linear": lambda: F.linear(x, w),
            "mm": lambda: torch.mm(x, wt),
            "mm_out": lambda: torch.mm(x, wt, out=buf),
            "linear_hbm": lambda: F.linear(x, wh),
            "mm_out_hbm_contig": lambda: torch.mm(x, wh.t(), out=hb),
            "mm_out_hbm_strided": lambda: torch.mm(x, wh.t(), out=big[:, :n_hbm]),
            "matmul_out": lambda: torch.matmul(x, wt, out=buf),
        }
        ref = F.linear(x, w).float()
        for key, fn in cands.items():
            got = fn()
            if got is None or got.shape[1] != n:
                continue
            err = float((got.float() - ref).norm() / ref.norm())
            assert err < 1e-2, (key, err)
        names = list(cands)
        times = {c: [] for c in names}
        clocks = []
        for rnd in range(a.rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for c in order:
                times[c].append(time_gpu(cands[c], warmup=3, reps=20, graph=True, flush_l2=True, reset_persisting_l2=False).median_ms)
                clocks.append(clock())
        for c in names:
            recs.append({"shape": [n, k], "batch": 512, "n_hbm": n_hbm, "cand": c, "ms_rounds": times[c], "ms": statistics.median(times[c])})
        base = statistics.median(times["linear"])
        print(f"{n}x{k} clocks {min(c for c in clocks if c) if any(clocks) else None}-{max(c for c in clocks if c) if any(clocks) else None} MHz")
        for c in names:
            m = statistics.median(times[c])
            print(f"  {c:20s} {m*1e3:7.1f} us  {m/base:.3f}x linear  rounds {' '.join(f'{t*1e3:.0f}' for t in times[c])}", flush=True)
        del w, x, big, buf, hb, ref; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
