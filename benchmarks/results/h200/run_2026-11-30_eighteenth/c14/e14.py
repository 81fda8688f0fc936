"""s18 e13: the direct kernel with wgmma (m64n128k16, two consumer warpgroups) instead of mma.sync
(.branches copy direct_gemm_wgmma.cu): correctness, then per-stage time with the 'host' rows in HBM
and host-mode times, against the shipped mma.sync kernel in the same process."""
import json, os, time, types
import torch
from smemkit.offload import direct_gemm as dg
from smemkit.offload.pinned import SplitWeight
from smemkit.offload.ring_gemm import linear_into
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_gpu

OUT = os.environ.get("OUT", "/tmp/out") + "/c14"
os.makedirs(OUT, exist_ok=True)
res = {"checks": [], "hbm": [], "host": []}
def save(): json.dump(res, open(f"{OUT}/e14.json", "w"), indent=1)
SRC = open(os.path.join(os.path.dirname(__file__), "direct_gemm_wgmma.cu")).read()
SRC2 = open(os.path.join(os.path.dirname(__file__), "direct_gemm_wgmma2.cu")).read()
shipped = {dt: dg._kernel(dt) for dt in (torch.bfloat16, torch.float16)}
wg = {dt: KernelModule(SRC, f"dg.wgmma.{dt}", {"DG_DTYPE": 0 if dt == torch.bfloat16 else 1}).function(dg.KERNEL, dg.PARAMS)
      for dt in (torch.bfloat16, torch.float16)}
wg2 = {dt: KernelModule(SRC2, f"dg.wgmma2.{dt}", {"DG_DTYPE": 0 if dt == torch.bfloat16 else 1}).function(dg.KERNEL, dg.PARAMS)
       for dt in (torch.bfloat16, torch.float16)}
def use(which):
    dg._KERNELS.clear(); dg._KERNELS.update({"wgmma": wg, "wgmma2": wg2, "mma_sync": shipped}[which])
def tm(fn):
    return time_gpu(fn, graph=True, flush_l2=True, flush_kind="read", reset_persisting_l2=False, reps=20).median_ms * 1e3
dev = torch.device("cuda", 0)
t0 = time.time()
use("wgmma2")
for (m, n, k, ratio, P, split, dt) in ((512, 256, 4096, 0.5, 4, None, torch.bfloat16), (7, 100, 136, 0.5, 1, None, torch.bfloat16),
                                      (130, 300, 200, 0.4, 2, 3, torch.bfloat16), (600, 520, 1032, 0.3, 4, 5, torch.bfloat16),
                                      (512, 3000, 256, 0.9, 4, 1, torch.bfloat16), (300, 1000, 640, 0.2, 2, 2, torch.float16),
                                      (512, 4096, 14336, 0.0359, 4, None, torch.bfloat16)):
    w = torch.randn(n, k, device=dev, dtype=dt) * k ** -0.5
    x = torch.randn(m, k, device=dev, dtype=dt)
    if m >= 3:
        x[0] = 0; x[1, k // 2] = float("inf"); x[2, 0] = float("nan")
    b = torch.randn(n, device=dev, dtype=dt)
    with SplitWeight(w, ratio) as sw:
        plan = dg.plan_direct(m, sw.host_rows, k, P=min(P, dg.default_cluster_size(m)) if P else None, split=split)
        outs = []
        for _ in range(2):
            y = torch.full((m, n), float("nan"), device=dev, dtype=dt)
            dg.direct_linear(x, sw, b, y, plan); torch.cuda.synchronize(); outs.append(y)
    ref = x.double() @ w.double().t() + b.double()
    got = outs[0].double()
    nf = bool(torch.equal(torch.isnan(got), torch.isnan(ref)) and torch.equal(torch.isinf(got), torch.isinf(ref)))
    fin = torch.isfinite(ref)
    err = float((got[fin] - ref[fin]).norm() / ref[fin].norm())
    bit = torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16))
    ok = err < (1e-2 if dt == torch.bfloat16 else 2e-3) and nf and bit
    res["checks"].append(dict(m=m, n=n, k=k, ratio=ratio, P=plan.P, split=plan.split, dtype=str(dt), err=err, nonfinite=nf, bitwise=bit, ok=ok)); save()
    print(f"check {m}x{n}x{k} r={ratio} P{plan.P} split {plan.split} {dt}: err {err:.1e} nf {nf} bit {bit} ok {ok}", flush=True)

M = 512
for N, K, hrows in ((28672, 8192, 1024), (28672, 8192, 2864), (4096, 14336, 416)):
    wd = torch.randn(hrows, K, device=dev, dtype=torch.bfloat16) * 0.05
    fake = types.SimpleNamespace(host_rows=hrows, shape=(N, K), n_hbm=N - hrows, host_ptr=wd.data_ptr(), dtype=torch.bfloat16, device=wd.device)
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    for which in ("mma_sync", "wgmma", "wgmma2"):
        use(which)
        for s in (4, 8):
            plan = dg.plan_direct(M, hrows, K, P=4, streams=s)
            us = tm(lambda: dg._launch_host_rows(x, fake, None, y, plan))
            spc = plan.tiles * plan.split * plan.cps / (plan.clusters // plan.m_groups)
            tf = 2 * M * hrows * K / us / 1e6
            rec = dict(which=which, shape=[N, K], rows=hrows, plan=plan.as_dict(), us=us, us_per_stage=us / spc, tflops=tf, tflops_per_sm=tf / plan.ctas)
            res["hbm"].append(rec); save()
            print(f"hbm {which:8s} {N}x{K} rows {hrows} ctas {plan.ctas:3d}: {us:7.1f} us {us/spc:5.2f} us/stage {tf:6.1f} TF/s ({tf/plan.ctas:4.2f}/SM)", flush=True)
print("done %.1fs" % (time.time() - t0))
