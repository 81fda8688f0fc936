"""Twelfth session A/B (experiment driver, not shipped): knobs of the non-cluster kernels at lars /
pearson_bwd 4K (issue 3's two non-cluster misses against torch.compile), edits of the generated
text: plain stores instead of __stcs (st), __ldcs -> __ldg for last-use loads (ld), other
__launch_bounds__ minimum CTAs (lbK). torch.compile timed in the same rounds; outputs checked."""
import argparse, json, re, statistics
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, parameter_kinds, dynamic_smem_bytes, kernel_name
from smemkit.reduction.kernels import prepare, kernel_source, regs_variant
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

KNOBS = {"base": [], "st": ["st"], "ld": ["ld"], "st+ld": ["st", "ld"], "lb2": ["lb2"], "lb4": ["lb4"], "st+lb4": ["st", "lb4"]}


def edit(src: str, knobs: list[str]) -> str:
    for k in knobs:
        if k == "st":
            src = src.replace("using namespace smemkit;", "using namespace smemkit;\n#define __stcs(p, v) (*(p) = (v))", 1)
        elif k == "ld":
            src = src.replace("#include <smemkit/reduce_reuse.cuh>", "#define __ldcs(p) __ldg(p)\n#include <smemkit/reduce_reuse.cuh>", 1)
        elif k.startswith("lb"):
            src = re.sub(r"__launch_bounds__\(THREADS, \d+\)", f"__launch_bounds__(THREADS, {k[2:]})", src, count=1)
    return src


def build(spec, v, knobs):
    name = kernel_name(spec, v)
    return KernelModule(edit(kernel_source(spec, v), knobs), name + "_" + "_".join(knobs or ["base"])).function(name, parameter_kinds(spec))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--compile-only", action="store_true"); a = ap.parse_args()
    plan = {"lars": [Variant("reread", threads=512), regs_variant(4096, 512), Variant("staged")],
            "pearson_bwd": [Variant("staged"), regs_variant(4096, 256), Variant("reread", threads=512)]}
    if a.compile_only:
        from smemkit.runtime.compiler import compile_module
        for name, vs in plan.items():
            for v in vs:
                for label, ks in KNOBS.items():
                    n = kernel_name(BUILTIN[name], v)
                    r = compile_module(edit(kernel_source(BUILTIN[name], v), ks), n, arch="sm_90a").resources[n]
                    print(name, v.label, label, r)
        raise SystemExit
    torch._dynamo.config.cache_size_limit = 64
    recs = []
    for name in ("lars", "pearson_bwd"):
        spec = BUILTIN[name]; M, N = 4096, 4096
        t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
        comp = spec.bytes.compulsory * M * N
        cands = {}
        comp_fn = torch.compile(EAGER[name], dynamic=False)
        cands["compile"] = lambda: comp_fn(t, s)
        for v in plan[name]:
            for label, ks in KNOBS.items():
                k = build(spec, v, ks); prep = prepare(spec, t, s); smem = dynamic_smem_bytes(spec, v, N)
                cands[f"{v.label}:{label}"] = (lambda k=k, v=v, prep=prep, smem=smem: (k.launch(M, v.threads, *prep.args, cluster=1, smem=smem, device=0), prep.outputs)[1])
        errs = {}
        for key, fn in cands.items():
            for o in (fn() if key != "compile" else {}).values():
                o.fill_(float("nan"))
            got = fn(); torch.cuda.synchronize()
            errs[key] = max(relative_error(got[o], w) for o, w in want.items())
        times = {key: [] for key in cands}
        for rnd in range(3):
            for key, fn in cands.items():
                times[key].append(time_both_modes(fn, warmup=5, reps=30).best.median_ms)
        base = statistics.median(times["compile"])
        for key in cands:
            ms = statistics.median(times[key])
            recs.append({"workload": name, "M": M, "N": N, "cand": key, "ms_rounds": times[key], "ms": ms, "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": errs[key]})
            print(f"{name:12s} {key:22s} {ms*1e3:8.2f} us {recs[-1]['tbps']:.3f} TB/s  vs compile {base/ms:.3f}  err {errs[key]:.1e}  rounds {' '.join(f'{x*1e3:.1f}' for x in times[key])}", flush=True)
        del t, want; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)
