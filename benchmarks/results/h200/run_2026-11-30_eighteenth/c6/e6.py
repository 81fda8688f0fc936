"""s18 e6: where a direct-kernel stage's time goes (weights in HBM): DG_DIAG 0 (all), 1 (no x copies),
2 (no math), 3 (no x ldmatrix); 16 / 32 / 64 CTAs; and 2 CTAs per SM are impossible (smem), so also
the math alone with stages=2."""
import json, os, time, types
import torch
from smemkit.offload import direct_gemm as dg
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_gpu
OUT = os.environ.get("OUT", "/tmp/out") + "/c6"
os.makedirs(OUT, exist_ok=True)
res = []
def tm(fn):
    return time_gpu(fn, graph=True, flush_l2=True, flush_kind="read", reset_persisting_l2=False, reps=20).median_ms * 1e3
M = 512
for N, K, hrows in ((28672, 8192, 1024),):
    wd = torch.randn(hrows, K, device="cuda", dtype=torch.bfloat16) * 0.05
    fake = types.SimpleNamespace(host_rows=hrows, shape=(N, K), n_hbm=N - hrows, host_ptr=wd.data_ptr(), dtype=torch.bfloat16, device=wd.device)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for diag in (0, 1, 2, 3):
        dg._KERNELS[torch.bfloat16] = KernelModule(dg.source(), f"dg.diag{diag}", {"DG_DTYPE": 0, "DG_DIAG": diag}).function(dg.KERNEL, dg.PARAMS)
        for P, s, st in ((4, 4, 4), (4, 8, 4), (4, 16, 4), (1, 4, 4), (1, 16, 4), (1, 32, 4)):
            plan = dg.plan_direct(M, hrows, K, P=P, streams=s, stages=st)
            us = tm(lambda: dg.direct_host_rows(x, fake, None, y, plan))
            spc = plan.tiles * plan.split * plan.cps / (plan.clusters // plan.m_groups)
            rec = dict(diag=diag, P=P, streams=s, stages=st, ctas=plan.ctas, us=us, us_per_stage=us / spc, tflops=2 * M * hrows * K / us / 1e6)
            res.append(rec); json.dump(res, open(f"{OUT}/e6.json", "w"), indent=1)
            print(f"diag {diag} P{P} s{s} ctas {plan.ctas}: {us:7.1f} us {us/spc:5.2f} us/stage {rec['tflops']:5.1f} TF/s", flush=True)
