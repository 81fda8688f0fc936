"""s18 e9: a hybrid decode path (batch 1-64): cuBLAS on the HBM rows (main stream), the split kernel
with host CTAs only reading host rows [a, n_h) in place (side stream, enqueued first), and the copy
engine landing host rows [0, a) in a ring slot followed by a cuBLAS GEMV of them (a = 0: no copy).
Against the shipped paths (auto, kernel, ring) timed in the same process, at the offload_ops
points. Correctness against float64 first."""
import json, math, os, time
import torch
import torch.nn.functional as F
from smemkit.offload import gemv
from smemkit.offload.gemv import split_linear, SplitScratch
from smemkit.offload.pinned import SplitWeight, TILE_ROWS
from smemkit.offload.ring_gemm import host_ring, linear_into
from smemkit.runtime.timing import time_gpu

OUT = os.environ.get("OUT", "/tmp/out") + "/c9"
os.makedirs(OUT, exist_ok=True)
res = {"checks": [], "points": []}
def save(): json.dump(res, open(f"{OUT}/e9.json", "w"), indent=1)
dev = torch.device("cuda", 0)
B_H, B_G = 54.98e9, 4263e9  # c8's link rates (offload_ops.json)
HOST_CTAS, WINDOW = 16, 16384
side = torch.cuda.Stream(); cps = torch.cuda.Stream(); gms = torch.cuda.Stream()
scratch = SplitScratch(0)

def host_only(x2, y2, sw, a):
    """The split kernel over host rows [a, n_h) only (no HBM CTAs), writing their output columns."""
    m, k = x2.shape
    n = sw.shape[0]
    n_hbm_k = sw.n_hbm + a
    n_host = n - n_hbm_k
    hs = gemv.host_steps_for_window(WINDOW)
    plan = gemv.plan_for(n_host, k, m, 0, x2.dtype, 0, host_ctas=HOST_CTAS, host_steps=hs)
    hbm_r = 128 * gemv.HBM_MT[plan.nt]
    nc = (-(-n_hbm_k // hbm_r) + -(-n_host // 16)) if plan.split_h > 1 else 0
    ws, counters = scratch.reserve(plan.split_h * m * n if plan.split_h > 1 else 0, nc)
    kern = gemv._kernel(x2.dtype, plan.nt)
    kern.launch(plan.grid, gemv.THREADS, 0, sw.host_ptr + a * k * 2, x2.data_ptr(), 0, y2.data_ptr(),
                0 if ws is None else ws.data_ptr(), 0 if counters is None else counters.data_ptr(),
                n, k, m, n_hbm_k, *plan.kernel_args(), smem=plan.smem, device=0)
    return plan

def hybrid(x2, sw, y2, a):
    main = torch.cuda.current_stream()
    ring = host_ring(dev, x2.dtype, main)
    k = x2.shape[1]
    n_hbm = sw.n_hbm
    for s in (side, cps, gms):
        s.wait_stream(main)
    if a:
        with torch.cuda.stream(cps):
            ring.slot(0, a, k).copy_(sw.host[:a], non_blocking=True)
    if a < sw.host_rows:
        with torch.cuda.stream(side):
            host_only(x2, y2, sw, a)
    linear_into(x2, sw.hbm, None, y2[:, :n_hbm])
    if a:
        with torch.cuda.stream(gms):
            gms.wait_stream(cps)
            linear_into(x2, ring.slot(0, a, k), None, y2[:, n_hbm:n_hbm + a])
    for s in (side, cps, gms):
        main.wait_stream(s)

def tm(fn):
    return time_gpu(fn, graph=True, flush_l2=True, flush_kind="read", reset_persisting_l2=False, reps=20).median_ms * 1e3

t0 = time.time()
for (n, k, m, ratio, frac) in ((1000, 1032, 5, 0.3, 0.5), (4096, 4096, 8, 0.05, 0.25), (300, 520, 64, 1.0, 0.0), (2048, 2048, 1, 0.2, 0.75)):
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * k ** -0.5
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    with SplitWeight(w, ratio) as sw:
        a = int(sw.host_rows * frac) // TILE_ROWS * TILE_ROWS
        y = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        hybrid(x, sw, y, a); torch.cuda.synchronize()
        ref = x.double() @ w.double().t()
        err = float((y.double() - ref).norm() / ref.norm())
        ok = bool(torch.isfinite(y).all()) and err < 1e-2
        res["checks"].append(dict(n=n, k=k, m=m, ratio=ratio, a=a, err=err, ok=ok)); save()
        print("check", n, k, m, ratio, a, "err %.1e ok %s" % (err, ok), flush=True)

points = {(4096, 14336): {"r*": 48, "r_hide": 144, "0.05": 208, "0.1": 416},
          (14336, 4096): {"r*": 176, "r_hide": 512, "0.05": 720, "0.1": 1440},
          (8192, 28672): {"r*": 112, "r_hide": 288, "0.05": 416, "0.1": 816},
          (28672, 8192): {"r*": 368, "r_hide": 1024, "0.05": 1440, "0.1": 2864}}
for (n, k), rs in points.items():
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    for lab, hrows in rs.items():
        if time.time() - t0 > 500: break
        sw = SplitWeight(w, hrows / n)
        W = n * k * 2; r = sw.host_rows / n
        ideal = max(r * W / B_H, (1 - r) * W / B_G) * 1e6
        for m in (1, 8, 64):
            if time.time() - t0 > 500: break
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            y = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            rec = dict(shape=[n, k], r=lab, batch=m, host_rows=sw.host_rows, ideal_us=ideal)
            rec["auto_path"] = gemv.linear_path(sw, m)
            for p in ("kernel", "ring"):
                rec[f"{p}_us"] = tm(lambda p=p: split_linear(x, sw, out=y, path=p))
            rec["cublas_hbm_rows_us"] = tm(lambda: linear_into(x, sw.hbm, None, y[:, :sw.n_hbm]))
            for frac in (0.0, 0.25, 0.5, 0.75):
                a = min(int(sw.host_rows * frac), (16 << 20) // (k * 2)) // TILE_ROWS * TILE_ROWS
                rec[f"hybrid_{frac}_us"] = tm(lambda a=a: hybrid(x, sw, y, a))
            rec["host_only_alone_us"] = tm(lambda: host_only(x, y, sw, 0))
            best = min((v, kk) for kk, v in rec.items() if kk.startswith("hybrid"))
            shipped = rec[f"{rec['auto_path']}_us"]
            res["points"].append(rec); save()
            print(f"{n}x{k} {lab:6s} B={m:2d} ideal {ideal:6.1f} | shipped {rec['auto_path']} {shipped:6.1f} ({shipped/ideal:.3f}) "
                  f"| hybrid " + " ".join(f"{rec[f'hybrid_{f}_us']/ideal:.3f}" for f in (0.0, 0.25, 0.5, 0.75)) +
                  f" | host alone {rec['host_only_alone_us']:.1f} hbm cublas {rec['cublas_hbm_rows_us']:.1f}", flush=True)
        sw.free()
print("done %.1fs" % (time.time() - t0))
