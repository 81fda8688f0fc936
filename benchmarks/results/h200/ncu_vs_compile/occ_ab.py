"""Occupancy A/B for the staged kernel at 4K/8K (experiment driver): __launch_bounds__ minimum CTAs
per SM 1 (shipped) vs 5, and the preferred shared-memory carveout default vs max; torch.compile
(default) timed in the same run for lars and pearson_bwd."""
import json, re, sys
import torch
from cuda.bindings import driver
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.codegen import Variant, generate as gen0
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare, launch_args
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

out = sys.argv[1]
ROWS = {"layernorm_bwd": 2048}
recs = []
def carve(spec, v, on):
    k = kernels.compiled_kernel(spec, v)
    h = k.module._load(k.name, 0)
    (err,) = driver.cuKernelSetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                         100 if on else -1, h.handle, driver.CUdevice(0))
    return int(err)
for mb in (1, 5):
    kernels.generate = lambda spec, v, mb=mb: re.sub(r"__launch_bounds__\(THREADS, 1\)", f"__launch_bounds__(THREADS, {mb})", gen0(spec, v)) if v.kind == "staged" else gen0(spec, v)
    kernels.compiled_kernel.cache_clear(); kernels._RESIDENT.clear()
    for name in ("lars", "pearson_bwd", "layernorm_bwd", "softmax_bwd", "wvar_bwd", "quant_int8"):
        spec = BUILTIN[name]
        for N in (4096, 8192):
            M = ROWS.get(name, 4096)
            t, s = example_inputs(name, M, N, device="cuda")
            want = reference(spec, t, s)
            comp = spec.bytes.compulsory * M * N
            line = []
            for on in (False, True):
                v = Variant("staged")
                prep = prepare(spec, t, s)
                fn = lambda: launch_args(spec, v, M, N, prep.args)
                fn(); err0 = carve(spec, v, on); kernels._RESIDENT.clear(); fn(); torch.cuda.synchronize()
                err = max((relative_error(prep.outputs[k], w) for k, w in want.items() if prep.outputs[k].dtype != torch.int8), default=0.0)
                tm = time_gpu(fn, warmup=5, reps=40, graph=True, flush_l2=True)
                grid = kernels.grid_clusters(spec, v, M, N, 0)
                recs.append({"workload": name, "N": N, "min_blocks": mb, "carveout_max": on, "ms": tm.median_ms,
                             "eff_tbps": comp / (tm.median_ms * 1e-3) / 1e12, "rel_err": err, "attr_err": err0})
                line.append(f"mb{mb}{'C' if on else '-'}={recs[-1]['eff_tbps']:.2f}")
            if mb == 5 and name in ("lars", "pearson_bwd"):
                f = torch.compile(EAGER[name], dynamic=False)
                tm = time_gpu(lambda: f(t, s), warmup=3, reps=40, graph=True, flush_l2=True)
                recs.append({"workload": name, "N": N, "variant": "compile", "ms": tm.median_ms, "eff_tbps": comp / (tm.median_ms * 1e-3) / 1e12})
                line.append(f"compile={recs[-1]['eff_tbps']:.2f}")
            print(f"{name:14s} {N:6d} " + " ".join(line) + f" err={err:.1e}", flush=True)
            del t, s, want
json.dump(recs, open(out, "w"), indent=1)
