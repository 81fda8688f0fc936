"""A/B of generated-source mutations on non-cluster and cluster kernels (experiment driver, not shipped).
modes: base; st_plain (outputs with plain st.global instead of st.global.cs); minb2 (regs kernels'
__launch_bounds__ minimum CTAs per SM 2 instead of 1024/threads); both."""
import argparse, json, re, sys
import torch
sys.path.insert(0, "benchmarks")
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.codegen import Variant, generate as gen0
from smemkit.reduction.kernels import prepare, launch_args, legality, regs_variant
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

ST = re.compile(r"__stcs\((reinterpret_cast<float4\*>\(p_\w+\)) \+ _v, (make_float4\([^;]*\))\);")
def mutate(src, mode):
    if "st" in mode:
        src, n = ST.subn(r"\1[_v] = \2;", src)
        assert n > 0 or "quant" in src
    if "nox1" in mode or "nox_all" in mode:  # timing probe only (wrong results): drop stage exchanges
        drop = ("bars[2 + (_it & 1)]",) if "nox1" in mode else ("bars[2 + (_it & 1)]", "bars[4 + (_it & 1)]")
        src = "\n".join(l for l in src.split("\n") if not any(d in l for d in drop))
    if "unroll4" in mode:
        src = src.replace("#pragma unroll 2", "#pragma unroll 4")
    if "minb" in mode:
        src = re.sub(r"__launch_bounds__\(THREADS, [24]\)", "__launch_bounds__(THREADS, 2)", src) if "_regs_" in src else src
    return src
MODES = {"base": "", "st_plain": "st", "minb2": "minb", "both": "st minb", "unroll4": "unroll4", "nox1": "nox1", "nox_all": "nox_all"}
ROWS = {"layernorm_bwd": 2048}
ap = argparse.ArgumentParser()
ap.add_argument("--out"); ap.add_argument("--workloads", nargs="+")
ap.add_argument("--triton", action="store_true")
ap.add_argument("--modes", nargs="+", default=None); ap.add_argument("--widths", nargs="+", type=int, default=None)
a = ap.parse_args()
SHAPES = {4096: lambda: [regs_variant(4096, 256), regs_variant(4096, 512), Variant("staged"), Variant("reread_l2", threads=512)],
          8192: lambda: [regs_variant(8192, 512), Variant("staged"), Variant("reread_l2", threads=512)],
          16384: lambda: [Variant("cluster", 2), Variant("cluster", 4), Variant("reread_l2")],
          32768: lambda: [Variant("cluster", 4), Variant("cluster", 8)],
          65536: lambda: [Variant("cluster", 4), Variant("cluster", 8)]}
if a.modes: MODES = {m: MODES[m] for m in a.modes}
if a.widths: SHAPES = {n: SHAPES[n] for n in a.widths}
recs = []
data = {}
for name in a.workloads:
    for N in SHAPES:
        M = ROWS.get(name, 4096)
        data[name, N] = example_inputs(name, M, N, device="cuda")
for mode, m in MODES.items():
    kernels.generate = lambda spec, v, m=m: mutate(gen0(spec, v), m)
    kernels.compiled_kernel.cache_clear(); kernels._RESIDENT.clear()
    for name in a.workloads:
        spec = BUILTIN[name]
        for N, vs in SHAPES.items():
            M = ROWS.get(name, 4096)
            tensors, scalars = data[name, N]
            comp = spec.bytes.compulsory * M * N
            row = []
            for v in vs():
                if legality(spec, v, N, 232448, 16):
                    continue
                prep = prepare(spec, tensors, scalars)
                fn = lambda: launch_args(spec, v, M, N, prep.args)
                fn(); torch.cuda.synchronize()
                t = time_gpu(fn, warmup=5, reps=40, graph=True, flush_l2=True)
                r = {"mode": mode, "workload": name, "M": M, "N": N, "label": v.label, "ms": t.median_ms,
                     "eff_tbps": comp / (t.median_ms * 1e-3) / 1e12}
                recs.append(r); row.append(f"{v.label}={r['eff_tbps']:.2f}")
            print(f"{mode:9s} {name:14s} {N:6d} " + " ".join(row), flush=True)
    json.dump(recs, open(a.out, "w"), indent=1)
if a.triton:
    from triton_baselines import TRITON
    for name in a.workloads:
        spec = BUILTIN[name]
        for N in (4096, 8192):
            M = ROWS.get(name, 4096)
            tensors, scalars = data[name, N]
            comp = spec.bytes.compulsory * M * N
            fn = lambda: TRITON[name](tensors, scalars)
            fn(); torch.cuda.synchronize()
            t = time_gpu(fn, warmup=5, reps=40, graph=True, flush_l2=True)
            recs.append({"mode": "triton", "workload": name, "M": M, "N": N, "label": "triton", "ms": t.median_ms,
                         "eff_tbps": comp / (t.median_ms * 1e-3) / 1e12})
            print(f"triton    {name:14s} {N:6d} triton={recs[-1]['eff_tbps']:.2f}", flush=True)
    json.dump(recs, open(a.out, "w"), indent=1)
