"""L2 prefetch of lars' v in the non-staged kernels (new codegen) vs without (old text), plus the
batched re-read kernel on a full grid, against torch.compile; the Inductor code for lars dumped."""
import json, logging, os, re, sys
import torch
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.api import non_cluster_variants
from smemkit.reduction.codegen import Variant, generate as gen_new
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare, launch_args, require_kernel_support
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes

out = sys.argv[1]
MODE = {"old": False}
FULL = {"on": False}


def gen(spec, v):
    src = gen_new(spec, v)
    if MODE["old"]:
        src = "\n".join(l for l in src.split("\n") if "prefetched into the L2 now" not in l
                        and "thread 0 issues it" not in l) + "\n"
    return src


grid0 = kernels.grid_clusters


def grid(spec, v, M, N, device):
    return M if (FULL["on"] and v.kind == "reread_l2") else grid0(spec, v, M, N, device)


kernels.generate = gen
kernels.grid_clusters = grid
POINTS = [("lars", 4096), ("lars", 8192), ("lars", 16384), ("lars", 32768), ("pearson_bwd", 4096),
          ("softmax_bwd", 4096), ("layernorm_bwd", 4096), ("wvar_bwd", 4096)]
torch._dynamo.config.cache_size_limit = 64
limit = require_kernel_support(0).smem_per_block_optin
recs = []
for name, N in POINTS:
    spec = BUILTIN[name]
    M = 2048 if name == "layernorm_bwd" else 4096
    t, s = example_inputs(name, M, N, device="cuda")
    want = reference(spec, t, s)
    comp = spec.bytes.compulsory * M * N
    line = []

    def timeit(label, fn, err=None):
        both = time_both_modes(fn, warmup=5, reps=30)
        ms = both.best.median_ms
        recs.append({"workload": name, "M": M, "N": N, "label": label, "ms": ms,
                     "ms_graph": both.graph.median_ms if both.graph else None,
                     "ms_launch": both.launch.median_ms, "eff_tbps": comp / (ms * 1e-3) / 1e12,
                     "rel_err": err})
        line.append(f"{label}={recs[-1]['eff_tbps']:.3f}")

    late = name == "lars"
    variants = non_cluster_variants(spec, N, limit) + [Variant("reread_l2", threads=512)]
    for mode in (("old", "new") if late else ("new",)):
        for i, v in enumerate(variants):
            full = i == len(variants) - 1
            MODE["old"] = mode == "old"
            FULL["on"] = full
            kernels.compiled_kernel.cache_clear()
            prep = prepare(spec, t, s)
            for o in prep.outputs.values():
                o.fill_(float("nan")) if o.dtype != torch.int8 else o.fill_(0)
            fn = lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args)
            fn(); torch.cuda.synchronize()
            err = max((relative_error(prep.outputs[k], w) for k, w in want.items()
                       if prep.outputs[k].dtype != torch.int8), default=0.0)
            timeit(f"{v.label}{'_fullgrid' if full else ''}{'_old' if mode == 'old' else ''}", fn, err)
    MODE["old"] = False
    FULL["on"] = False
    kernels.compiled_kernel.cache_clear()
    if late and N in (4096, 16384):
        torch._logging.set_logs(output_code=True)
    f = torch.compile(EAGER[name], dynamic=False)
    f(t, s); torch.cuda.synchronize()
    torch._logging.set_logs(output_code=False)
    timeit("compile", lambda: f(t, s))
    print(f"{name:14s} {N:6d} " + " ".join(line), flush=True)
    del t, s, want
json.dump(recs, open(out, "w"), indent=1)
