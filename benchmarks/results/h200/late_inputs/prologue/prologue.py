"""Non-staged kernels without the mbarrier prologue (they use no mbarrier) and the L2 prefetch of
lars' v kept only where it paid (regs), against torch.compile and our Triton kernel."""
import json, re, sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path("benchmarks").resolve()))
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.api import non_cluster_variants
from smemkit.reduction.codegen import Variant, generate as gen_new
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare, launch_args, require_kernel_support
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes
from triton_baselines import TRITON

out = sys.argv[1]
OPT = {"np": False, "pf": True, "full": False}
PROLOGUE = re.compile(r"  if \(threadIdx.x == 0\) \{\n    for \(int _b = 0; _b < \d+; \+\+_b\) mbarrier_init.*?\n"
                      r"    fence_mbarrier_init_cluster\(\);\n    fence_proxy_async_shared\(\);\n  \}\n  __syncthreads\(\);\n")


def gen(spec, v):
    src = gen_new(spec, v)
    if not OPT["pf"]:
        src = "\n".join(l for l in src.split("\n") if "prefetched into the L2 now" not in l
                        and "thread 0 issues it" not in l) + "\n"
    if OPT["np"]:
        src, n = PROLOGUE.subn("", src)
        assert n == 1, v
    return src


grid0 = kernels.grid_clusters
kernels.generate = gen
kernels.grid_clusters = lambda spec, v, M, N, d: M if (OPT["full"] and v.kind == "reread_l2") else grid0(spec, v, M, N, d)
POINTS = [(w, 4096) for w in ("lars", "pearson_bwd", "softmax_bwd", "layernorm_bwd", "wvar_bwd", "quant_int8")]
POINTS += [("lars", 8192), ("lars", 16384), ("lars", 32768), ("pearson_bwd", 8192), ("softmax_bwd", 8192)]
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

    variants = [(v, False) for v in non_cluster_variants(spec, N, limit)] + [(Variant("reread_l2", threads=512), True)]
    for v, full in variants:
        modes = [False] if v.staged else [False, True]
        pfs = [True, False] if (name == "lars" and v.kind == "regs") else [v.kind == "regs" or v.staged]
        for np_ in modes:
            for pf in pfs:
                OPT.update(np=np_, pf=pf, full=full)
                kernels.compiled_kernel.cache_clear()
                prep = prepare(spec, t, s)
                for o in prep.outputs.values():
                    o.fill_(float("nan")) if o.dtype != torch.int8 else o.fill_(0)
                fn = lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args)
                fn(); torch.cuda.synchronize()
                err = max((relative_error(prep.outputs[k], w) for k, w in want.items()
                           if prep.outputs[k].dtype != torch.int8), default=0.0)
                assert err < 1e-5, (v, err)
                label = v.label + ("_full" if full else "") + ("_np" if np_ else "") + ("" if pf or name != "lars" else "_nopf")
                timeit(label, fn, err)
    OPT.update(np=False, pf=True, full=False)
    kernels.compiled_kernel.cache_clear()
    f = torch.compile(EAGER[name], dynamic=False)
    f(t, s); torch.cuda.synchronize()
    timeit("compile", lambda: f(t, s))
    tf = TRITON[name]
    tf(t, s); torch.cuda.synchronize()
    timeit("triton", lambda: tf(t, s))
    print(f"{name:14s} {N:6d} " + " ".join(line), flush=True)
    del t, s, want
json.dump(recs, open(out, "w"), indent=1)
