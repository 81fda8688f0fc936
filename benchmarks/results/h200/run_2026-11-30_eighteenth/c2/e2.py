"""s18 e2: why the direct kernel's TMA host reads are slow. (A) the host-path probe's TMA kernel on
tensor maps of varied row length K, box rows, P, L2 promotion, out-of-bounds boxes, and small exact
pinned allocations; (B) the direct kernel with the map's L2 promotion switched."""
import ctypes, json, os, time
import torch
from cuda.bindings import driver as D
from smemkit.offload.host_paths import HostPathProbe, THREADS, link_rate
from smemkit.offload.pinned import PinnedBuffer, SplitWeight
from smemkit.offload import direct_gemm as dg
from smemkit.runtime.timing import time_gpu

OUT = os.environ.get("OUT", "/tmp/out") + "/c2"
os.makedirs(OUT, exist_ok=True)
res = {"probe": [], "direct": []}
def save(): json.dump(res, open(f"{OUT}/e2.json", "w"), indent=1)
PROMO = {"none": D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
         "128B": D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
         "256B": D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B}
def tmap(ptr, cols, rows, box_rows, promo, dt=D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16):
    err, m = D.cuTensorMapEncodeTiled(dt, 2, ptr, [D.cuuint64_t(cols), D.cuuint64_t(rows)], [D.cuuint64_t(cols * 2)],
        [D.cuuint32_t(64), D.cuuint32_t(box_rows)], [D.cuuint32_t(1), D.cuuint32_t(1)],
        D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, D.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        PROMO[promo], D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert int(err) == 0, err
    return torch.frombuffer(bytearray(ctypes.string_at(m.getPtr(), 128)), dtype=torch.uint8).cuda()

probe = HostPathProbe(256)
def run(ptr, cols, rows_valid, rows_walk, box_rows, P, promo, ctas=16, stages=4):
    m = tmap(ptr, cols, rows_valid, box_rows, promo)
    tpb = cols // 64
    bands = rows_walk // (box_rows * P)
    n_tiles = bands * tpb
    stages = min(stages, (200 << 10) // (box_rows * P * 128))
    smem = stages * box_rows * P * 128 + 1024
    vals = []
    for _ in range(3):
        probe.stats.zero_()
        probe.tma_kernel.launch(ctas, THREADS, m, n_tiles, tpb, box_rows, 64, stages, probe.stats, smem=smem, cluster=P)
        torch.cuda.synchronize()
        st = probe.stats.view(-1, 4)[:ctas].cpu().numpy().astype("uint64")
        vals.append(link_rate(st, P)[0])
    vals.sort()
    return vals[1]
t0 = time.time()
base = probe.host.device_ptr
for cols in (4096, 8192, 14336, 28672):
    for box_rows, P in ((32, 4), (128, 1), (64, 2), (128, 4)):
        for promo in ("none", "128B", "256B"):
            rows = (32 << 20) // (cols * 2) // (box_rows * P) * (box_rows * P)
            g = run(base, cols, rows, rows, box_rows, P, promo)
            res["probe"].append(dict(kind="full", cols=cols, box_rows=box_rows, P=P, promo=promo, gbps=g)); save()
            print(f"full  K {cols:5d} box {box_rows:3d} P {P} {promo:4s} {g/1e9 if g > 1e6 else g:6.1f} GB/s", flush=True)
# out of bounds: only part of each band valid (valid rows < walked rows)
for cols in (14336, 8192):
    for valid, walk, box_rows, P in ((48, 128, 32, 4), (48, 128, 128, 1), (100, 128, 32, 4), (1000, 1024, 32, 4), (1024, 1024, 32, 4)):
        for promo in ("none", "128B"):
            g = run(base, cols, valid, walk, box_rows, P, promo, ctas=4 if walk == 128 else 16)
            res["probe"].append(dict(kind="oob", cols=cols, valid=valid, walk=walk, box_rows=box_rows, P=P, promo=promo, gbps=g)); save()
            print(f"oob   K {cols:5d} valid {valid} walk {walk} box {box_rows} P {P} {promo:4s} {g/1e9 if g > 1e6 else g:6.1f} GB/s", flush=True)
# small exact allocations vs a slice of the big buffer
for nbytes in (1376256, 4128768, 16777216):
    small = PinnedBuffer(nbytes)
    cols = 14336 if nbytes < 16777216 else 8192
    rows = nbytes // (cols * 2) // 128 * 128
    for promo in ("none", "128B"):
        for ptr, what in ((small.device_ptr, "small"), (base, "big")):
            g = run(ptr, cols, rows, rows, 32, 4, promo, ctas=4 * min(4, rows // 128))
            res["probe"].append(dict(kind=what, nbytes=nbytes, cols=cols, rows=rows, promo=promo, gbps=g)); save()
            print(f"{what:5s} {nbytes} K {cols} rows {rows} {promo:4s} {g/1e9 if g > 1e6 else g:6.1f} GB/s", flush=True)
    small.free()
print("probe %.1fs" % (time.time() - t0), flush=True)

def tm(fn):
    return time_gpu(fn, graph=True, flush_l2=True, flush_kind="read", reset_persisting_l2=False, reps=20).median_ms * 1e3
M = 512
for (N, K), hrows in (((4096, 14336), 48), ((4096, 14336), 144), ((4096, 14336), 208), ((28672, 8192), 1024), ((28672, 8192), 1440)):
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.05
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    sw = SplitWeight(w, hrows / N)
    for promo in ("none", "128B", "256B"):
        for P, streams in ((4, 4), (4, 8), (1, 4)):
            plan = dg.plan_direct(M, hrows, K, P=P, streams=streams)
            dg._MAPS[(sw.host_ptr, hrows, K, P, torch.bfloat16)] = tmap(sw.host_ptr, K, hrows, 128 // P, promo)
            us = tm(lambda: dg.direct_host_rows(x, sw, None, y, plan))
            yb = torch.full_like(y, float("nan")); dg.direct_host_rows(x, sw, None, yb, plan); torch.cuda.synchronize()
            ref = (x.double() @ sw.host.cuda().double().t())
            err = ((yb[:, sw.n_hbm:].double() - ref).norm() / ref.norm()).item()
            rec = dict(shape=[N, K], host_rows=hrows, promo=promo, P=P, streams=streams, us=us, gbps=hrows * K * 2 / us / 1e3, rel_err=err)
            res["direct"].append(rec); save()
            print(f"direct {N}x{K} rows {hrows} {promo:4s} P{P} s{streams}: {us:8.1f} us {rec['gbps']:5.1f} GB/s err {err:.1e}", flush=True)
        dg._MAPS.clear()
    sw.free()
print("done %.1fs" % (time.time() - t0))
