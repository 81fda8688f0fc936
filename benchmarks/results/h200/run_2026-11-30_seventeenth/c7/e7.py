"""Experiment: where the split kernel's fixed time goes at host-bound points (globaltimer stamps
per CTA: entry, first host group landed, exit, SM; an SPLIT_STAMPS build, patch in the results).
`python e7.py OUT.json`."""
import json, sys
import torch
import torch.nn.functional as F
sys.path.insert(0, "benchmarks")
from offload_ops import timed
from smemkit.offload import gemv
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.launch import KernelModule

torch.manual_seed(0)
MOD = KernelModule(gemv.source(), "exp/split_gemv_stamps", {**gemv.defines(torch.bfloat16), "SPLIT_STAMPS": 1})


def stamped(x, sw, hc=16, hs=2):
    b, k = x.shape
    n = sw.shape[0]
    plan = gemv.launch_plan_for(b, sw, host_ctas=hc, host_window=hs * 8192, split_g=1, split_h=1)
    kern = MOD.function(gemv.kernel_name(plan.nt), gemv.KERNEL_PARAMS)
    st = torch.full((plan.grid, 4), -1, dtype=torch.int64, device="cuda")
    y = torch.empty(b, n, dtype=x.dtype, device="cuda")
    torch.cuda.synchronize()
    kern.launch(plan.grid, gemv.THREADS, sw.hbm.data_ptr() if sw.n_hbm else 0, sw.host_ptr if sw.host_rows else 0,
                x.data_ptr(), 0, y.data_ptr(), st.data_ptr(), 0, n, k, b, sw.n_hbm, *plan.kernel_args(),
                smem=plan.smem)
    torch.cuda.synchronize()
    s = st.cpu().numpy().astype("int64")
    t0 = s[:, 0].min()
    host = s[: plan.host_ctas]
    hbm = s[plan.host_ctas:]
    out = {"grid": plan.grid, "host_ctas": plan.host_ctas, "span_us": (s[:, 1].max() - t0) / 1e3,
           "entry_spread_us": (s[:, 0].max() - t0) / 1e3}
    if len(host):
        out.update(host_first_data_us=[(h[2] - t0) / 1e3 for h in host], host_exit_us=[(h[1] - t0) / 1e3 for h in host])
    if len(hbm):
        out.update(hbm_exit_max_us=(hbm[:, 1].max() - t0) / 1e3, hbm_exit_median_us=float(sorted(hbm[:, 1])[len(hbm) // 2] - t0) / 1e3)
    return out


res = {}
tiny = SplitWeight(torch.randn(128, 64, device="cuda", dtype=torch.bfloat16), 0.0)
xt = torch.randn(1, 64, device="cuda", dtype=torch.bfloat16)
res["tiny_kernel_event_us"] = timed(lambda: gemv.split_linear(xt, tiny, path="kernel"), 20, 3)[0]["ms"] * 1e3
res["empty_fill_event_us"] = timed(lambda: xt.fill_(0), 20, 3)[0]["ms"] * 1e3
for n, k, r in ((28672, 8192, 0.0128), (4096, 14336, 0.05), (4096, 14336, 0.0352), (14336, 4096, 0.05)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    sw = SplitWeight(w, r)
    host_only = SplitWeight(w[sw.n_hbm:].contiguous(), 1.0)
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    for label, weight in (("split", sw), ("host_only", host_only)):
        key = f"{n}x{k}/r{r}/{label}"
        ev = timed(lambda: gemv.split_linear(x, weight, path="kernel", host_ctas=16, host_window=16384, split_g=1, split_h=1), 20, 3)[0]["ms"] * 1e3

        def twice():
            gemv.split_linear(x, weight, path="kernel", host_ctas=16, host_window=16384, split_g=1, split_h=1)
            gemv.split_linear(x, weight, path="kernel", host_ctas=16, host_window=16384, split_g=1, split_h=1)
        ev2 = timed(twice, 20, 3)[0]["ms"] * 1e3
        stamps = [stamped(x, weight) for _ in range(3)]
        host_bytes = weight.host_rows * k * 2
        res[key] = {"event_us": ev, "twice_event_us": ev2, "host_bytes": host_bytes,
                    "host_at_55_45_us": host_bytes / 55.45e3, "stamps": stamps}
        s = stamps[-1]
        print(f"{key}: event {ev:.1f} us (twice {ev2:.1f}); span {s['span_us']:.1f}; entry spread {s['entry_spread_us']:.1f}; "
              f"host first data {min(s.get('host_first_data_us', [0])):.1f}-{max(s.get('host_first_data_us', [0])):.1f}; "
              f"host exit {min(s.get('host_exit_us', [0])):.1f}-{max(s.get('host_exit_us', [0])):.1f}; "
              f"hbm exit {s.get('hbm_exit_max_us', 0):.1f}; copy-engine time {host_bytes / 55.45e3:.1f}", flush=True)
    sw.free(); host_only.free()
print("tiny kernel", res["tiny_kernel_event_us"], "fill", res["empty_fill_event_us"])
json.dump(res, open(sys.argv[1], "w"), indent=1)
