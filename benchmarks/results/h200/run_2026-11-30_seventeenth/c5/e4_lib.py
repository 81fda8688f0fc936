"""Experiment (not shipped yet): the split GEMV's HBM role fed by one producer thread (HBM_LOAD=1:
TMA tensor copy of the weight box + bulk copies of the x rows) against the shipped cp.async role
(HBM_LOAD=0), same plans, graph-timed with the clean read flush. Checks: bitwise equal outputs of
the two variants, rel err vs float64, special values. `python e4.py OUT.json`."""
import ctypes, json, sys
import torch
import torch.nn.functional as F
sys.path.insert(0, "benchmarks")
from offload_ops import timed
from smemkit.offload import gemv
from smemkit.offload.pinned import SplitWeight
from smemkit.runtime.launch import KernelModule
from cuda.bindings import driver

torch.manual_seed(0)
dev = 0
MOD = KernelModule(gemv.source(), "exp/split_gemv_tma", {**gemv.defines(torch.bfloat16), "HBM_LOAD": 1})
KERN = {}
MAPS = {}


def kern(nt):
    if nt not in KERN:
        KERN[nt] = MOD.function(gemv.kernel_name(nt), gemv.KERNEL_PARAMS + ("ptr",))
    return KERN[nt]


def tmap(sw, rows_box):
    key = (sw.hbm.data_ptr(), sw.n_hbm, sw.shape[1], rows_box)
    if key not in MAPS:
        k = sw.shape[1]
        err, m = driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, sw.hbm.data_ptr(),
            [driver.cuuint64_t(k), driver.cuuint64_t(sw.n_hbm)], [driver.cuuint64_t(k * 2)],
            [driver.cuuint32_t(64), driver.cuuint32_t(rows_box)], [driver.cuuint32_t(1), driver.cuuint32_t(1)],
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
            driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        assert int(err) == 0, err
        raw = ctypes.string_at(m.getPtr(), 128)
        MAPS[key] = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to("cuda")
    return MAPS[key]


def tma_linear(x, sw, depth, hc=16, hs=2):
    b, k = x.shape
    n = sw.shape[0]
    nt = gemv.batch_tiles(b)
    smem = gemv.smem_bytes(nt, hbm=sw.n_hbm > 0, host=sw.host_rows > 0, hbm_depth=depth, host_steps=hs) + 128
    slots = kern(nt).max_active_ctas(gemv.THREADS, smem)
    plan = gemv.plan_launch(n, k, b, sw.n_hbm, slots=slots, host_ctas=hc, host_steps=hs, hbm_depth=depth)
    scratch = gemv.default_scratch(dev)
    ws, counters = scratch.reserve(plan.ws_floats, plan.n_counters)
    y = torch.empty(b, n, dtype=x.dtype, device="cuda")
    m = tmap(sw, gemv.HBM_ROWS[nt]) if sw.n_hbm else torch.zeros(128, dtype=torch.uint8, device="cuda")
    kern(nt).launch(plan.grid, gemv.THREADS, sw.hbm.data_ptr() if sw.n_hbm else 0, sw.host_ptr if sw.host_rows else 0,
                    x.data_ptr(), 0, y.data_ptr(), ws.data_ptr() if ws is not None else 0,
                    counters.data_ptr() if counters is not None else 0, n, k, b, sw.n_hbm, *plan.kernel_args(),
                    m.data_ptr(), smem=smem, device=dev)
    return y, plan


def ref_linear(x, sw, depth):
    return gemv.split_linear(x, sw, path="kernel", hbm_depth=depth, host_ctas=16, host_window=16384)


