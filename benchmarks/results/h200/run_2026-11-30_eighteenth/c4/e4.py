"""s18 e4: what limits the direct kernel at ~3.6 GB/s per cluster: (a) the same kernel with the
'host' rows in device memory (compute + pipeline alone), (b) the probe's TMA multicast with 64-row
boxes at P = 2/4 and 1-6 stages, (c) more clusters on the host."""
import ctypes, json, os, time, types
import torch
from cuda.bindings import driver as D
from smemkit.offload.host_paths import HostPathProbe, THREADS, link_rate
from smemkit.offload.pinned import SplitWeight
from smemkit.offload import direct_gemm as dg
from smemkit.runtime.timing import time_gpu

OUT = os.environ.get("OUT", "/tmp/out") + "/c4"
os.makedirs(OUT, exist_ok=True)
res = {"hbm": [], "probe": [], "host": []}
def save(): json.dump(res, open(f"{OUT}/e4.json", "w"), indent=1)
def tm(fn):
    return time_gpu(fn, graph=True, flush_l2=True, flush_kind="read", reset_persisting_l2=False, reps=20).median_ms * 1e3
M = 512
t0 = time.time()
for N, K, hrows in ((28672, 8192, 1024), (4096, 14336, 144), (28672, 8192, 2864)):
    wd = torch.randn(hrows, K, device="cuda", dtype=torch.bfloat16) * 0.05
    fake = types.SimpleNamespace(host_rows=hrows, shape=(N, K), n_hbm=N - hrows, host_ptr=wd.data_ptr(),
                                 dtype=torch.bfloat16, device=wd.device)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    for P, s, st in ((4, 4, 4), (4, 8, 4), (4, 16, 4), (2, 8, 4), (1, 4, 4), (1, 8, 4), (4, 8, 2), (4, 8, 6)):
        plan = dg.plan_direct(M, hrows, K, P=P, streams=s, stages=st)
        us = tm(lambda: dg.direct_host_rows(x, fake, None, y, plan))
        ref = x.double() @ wd.double().t()
        err = ((y[:, N - hrows:].double() - ref).norm() / ref.norm()).item()
        stages_per_cta = plan.tiles * plan.split * plan.cps / (plan.clusters // plan.m_groups)
        tf = 2 * M * hrows * K / us / 1e6
        rec = dict(shape=[N, K], rows=hrows, plan=plan.as_dict(), us=us, tflops=tf, us_per_stage=us / stages_per_cta, rel_err=err)
        res["hbm"].append(rec); save()
        print(f"hbm  {N}x{K} rows {hrows} P{P} s{s} st{st} ctas {plan.ctas}: {us:7.1f} us {tf:6.1f} TF/s {us/stages_per_cta:5.2f} us/stage err {err:.1e}", flush=True)

probe = HostPathProbe(256)
def tmap(ptr, cols, rows, box_rows):
    err, m = D.cuTensorMapEncodeTiled(D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr,
        [D.cuuint64_t(cols), D.cuuint64_t(rows)], [D.cuuint64_t(cols * 2)], [D.cuuint32_t(64), D.cuuint32_t(box_rows)],
        [D.cuuint32_t(1), D.cuuint32_t(1)], D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        D.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B, D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert int(err) == 0
    return torch.frombuffer(bytearray(ctypes.string_at(m.getPtr(), 128)), dtype=torch.uint8).cuda()
cols = 8192
for box, P in ((64, 4), (64, 2), (64, 1), (128, 1)):
    for clusters in (4, 8):
        for stages in (1, 2, 4, 6):
            rows = (32 << 20) // (cols * 2) // (box * P) * (box * P)
            m = tmap(probe.host.device_ptr, cols, rows, box)
            tpb = cols // 64
            n_tiles = rows // (box * P) * tpb
            st = min(stages, (200 << 10) // (box * P * 128))
            vals = []
            for _ in range(3):
                probe.stats.zero_()
                probe.tma_kernel.launch(clusters * P, THREADS, m, n_tiles, tpb, box, 64, st, probe.stats,
                                        smem=st * box * P * 128 + 1024, cluster=P)
                torch.cuda.synchronize()
                vals.append(link_rate(probe.stats.view(-1, 4)[:clusters * P].cpu().numpy().astype("uint64"), P)[0])
            g = sorted(vals)[1]
            res["probe"].append(dict(box=box, P=P, clusters=clusters, stages=st, tile_kb=box * P * 128 / 1024, link_gbps=g)); save()
            print(f"probe box {box} P {P} clusters {clusters} stages {st} (tile {box*P*128//1024} KB): {g:5.1f} GB/s", flush=True)

for N, K, hrows in ((28672, 8192, 1024), (4096, 14336, 208)):
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.05
    sw = SplitWeight(w, hrows / N)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for P, s, st in ((4, 8, 6), (4, 12, 6), (4, 16, 4), (4, 16, 6), (2, 16, 4), (2, 24, 4), (1, 8, 4)):
        plan = dg.plan_direct(M, hrows, K, P=P, streams=s, stages=st)
        us = tm(lambda: dg.direct_host_rows(x, sw, None, y, plan))
        rec = dict(shape=[N, K], rows=hrows, plan=plan.as_dict(), us=us, host_gbps=hrows * K * 2 / us / 1e3,
                   link_gbps=hrows * K * 2 * plan.m_groups / us / 1e3)
        res["host"].append(rec); save()
        print(f"host {N}x{K} rows {hrows} P{P} s{s} st{st} ctas {plan.ctas}: {us:7.1f} us host {rec['host_gbps']:5.1f} link {rec['link_gbps']:5.1f} GB/s", flush=True)
    sw.free()
print("done %.1fs" % (time.time() - t0))
