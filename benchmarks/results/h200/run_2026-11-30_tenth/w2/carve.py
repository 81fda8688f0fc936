"""Tenth session, call 2: is the regs_v4 T_B bias (w1/bias.*) the SM's L1 / shared-memory split
left by the kernel before? w1 showed the same regs kernel 4-5 % slower after control / cluster
kernels (large shared memory) than after other non-cluster kernels, at 1980 MHz throughout.
Part 1, at the regs points: a history kernel (227 KB of dynamic shared memory, or none), then the
T_B kernel timed (time_both_modes) at carveout preferences default / 0 / the smallest that keeps
its occupancy (c_opt) / 100. Part 2, every T_B kernel of the embedded v9 table: after the big
history kernel with the default preference and with c_opt, and after the zero one."""
import json, math, sys
import torch
from cuda.bindings import driver
from smemkit.reduction import BUILTIN
from smemkit.reduction.api import variant_from_label
from smemkit.reduction.kernels import compiled_kernel, dynamic_smem_bytes, launch, prepare
from smemkit.reduction.tables import h200_smemkit
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

DEV = 0
INFO = gpu_info(DEV)
ATTR = driver.CUfunction_attribute
SRC = 'extern "C" __global__ void hist(int* p) { extern __shared__ int s[]; if (p) { s[threadIdx.x] = 1; p[0] = s[0]; } }'
HIST = KernelModule(SRC, "hist").function("hist", ["ptr"])


def history(kind):
    smem = INFO.smem_per_block_optin if kind == "big" else 0
    HIST.launch(INFO.sm_count * 4, 128, 0, smem=smem)
    torch.cuda.synchronize()


def handle(kernel):
    return kernel.module._load(kernel.name, DEV)


def set_pref(kernel, pct):
    (err,) = driver.cuKernelSetAttribute(ATTR.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct,
                                         handle(kernel).handle, driver.CUdevice(DEV))
    assert int(err) == 0, err


def occupancy(kernel, threads, smem):
    return int(handle(kernel).occupancy.max_active_blocks_per_multiprocessor(threads, smem))


def static_smem(kernel):
    err, v = driver.cuKernelGetAttribute(ATTR.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, handle(kernel).handle,
                                         driver.CUdevice(DEV))
    assert int(err) == 0, err
    return v


def timed(call):
    m = time_both_modes(call, warmup=3, reps=20)
    return m.best.median_ms * 1e3


out = sys.argv[1]
res = {"part1": [], "part2": []}
table = {(p.workload, p.shape.N): p for p in h200_smemkit()}
PART1 = [("layernorm_bwd", 4096), ("layernorm_bwd", 8192), ("pearson_bwd", 4096), ("softmax_bwd", 4096),
         ("quant_int8", 4096)]
order = PART1 + [k for k in sorted(table) if k not in PART1]
for name, N in order:
    p = table[(name, N)]; spec = BUILTIN[name]; M = p.shape.M
    v = variant_from_label(p.measured.baseline_variant, N)
    t, s = example_inputs(name, M, N, device="cuda")
    prep = prepare(spec, t, s)
    launch(spec, v, prep); torch.cuda.synchronize()
    k = compiled_kernel(spec, v)
    dyn = dynamic_smem_bytes(spec, v, N); st = static_smem(k)
    occ = {}
    for pct in (-1, 0, 100):
        set_pref(k, pct); occ[pct] = occupancy(k, v.threads, dyn)
    per_cta = dyn + st + 1024
    c_opt = min(100, math.ceil(100 * occ[100] * per_cta / INFO.smem_per_sm))
    set_pref(k, c_opt); occ["c_opt"] = occupancy(k, v.threads, dyn)
    rec = {"workload": name, "N": N, "M": M, "variant": v.label, "dyn": dyn, "static": st, "occ": occ, "c_opt": c_opt}
    call = lambda: launch(spec, v, prep)
    if (name, N) in PART1:
        rows = {}
        for pref in (-1, 0, c_opt, 100):
            set_pref(k, pref)
            for h in ("big", "zero"):
                history(h); rows[f"pref{pref}_{h}"] = timed(call)
        rec["times"] = rows; res["part1"].append(rec)
        print(f"{name:14s} {N:6d} {v.label:20s} occ {occ} c_opt {c_opt} | "
              + " ".join(f"{kk}={x:.1f}" for kk, x in rows.items()), flush=True)
    else:
        rows = {}
        set_pref(k, -1); history("big"); rows["default_big"] = timed(call)
        history("zero"); rows["default_zero"] = timed(call)
        set_pref(k, c_opt); history("big"); rows["copt_big"] = timed(call)
        rec["times"] = rows; res["part2"].append(rec)
        print(f"{name:14s} {N:6d} {v.label:20s} dyn {dyn:6d} occ {occ[100]}/{occ['c_opt']} c_opt {c_opt:3d} | "
              + " ".join(f"{kk}={x:.1f}" for kk, x in rows.items()), flush=True)
    set_pref(k, -1)
    del t, prep
    json.dump(res, open(out, "w"), indent=1)
