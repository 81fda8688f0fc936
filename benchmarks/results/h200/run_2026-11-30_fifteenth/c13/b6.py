"""Fifteenth session driver (experiment, not shipped): the looped re-read kernel (reread_t512,
`#pragma unroll 1`, one float4 per input per iteration, so each iteration's loads wait for the
previous one's) with its element loops unrolled 2 or 4 times, so that the loads of several
iterations are in flight at once, as Triton's software pipelining issues them; at 3 or 2 CTAs per
SM (__launch_bounds__). lars and pearson_bwd at 4K against torch.compile, the Triton kernel and
the shipped best; rotated rounds, timed as benchmarks/reduction.py times (time_both_modes)."""
import argparse, json, statistics

import torch

from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.codegen import Variant, generate, kernel_name, parameter_kinds
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare
from smemkit.reduction.reference import output_errors
from smemkit.reduction.triton_kernels import TRITON
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=5)
a = ap.parse_args()
torch._dynamo.config.cache_size_limit = 64
res = []
for name in ("lars", "pearson_bwd"):
    spec = BUILTIN[name]
    M, N = 4096, 4096
    T, S = example_inputs(name, M, N, device="cuda")
    want = reference(spec, T, S)
    comp = torch.compile(EAGER[name], dynamic=False)
    cands = {"compile": (lambda: comp(T, S), None), "triton": (lambda: TRITON[name](T, S), None),
             "regs_t256": (lambda: run(spec, T, S, variant="regs_t256"), None),
             "reread_t512": (lambda: run(spec, T, S, variant="reread_t512"), None)}
    v = Variant("reread", threads=512)
    for mb, unroll in ((3, 2), (2, 2), (2, 4)):
        src = generate(spec, v, min_blocks=mb).replace("#pragma unroll 1\n", f"#pragma unroll {unroll}\n")
        kname = kernel_name(spec, v)
        kernel = KernelModule(src, kname).function(kname, parameter_kinds(spec))
        prep = prepare(spec, T, S)

        def call(kernel=kernel, prep=prep):
            kernel.launch(M, 512, *prep.args, smem=0, device=0)
            return prep.outputs
        cands[f"reread_t512_u{unroll}@{mb}"] = (call, prep.outputs)
    checks = {}
    for c, (fn, outs) in cands.items():
        if outs is not None:
            for t in outs.values():
                t.fill_(float("nan"))
        got = fn(); torch.cuda.synchronize()
        first = {k: t.clone() for k, t in got.items()}
        got2 = fn(); torch.cuda.synchronize()
        checks[c] = (output_errors(first, want)["rel_err"], all(torch.equal(first[k], got2[k]) for k in first))
        print(f"check {name} {c:22s} rel_err {checks[c][0]:.2e} bitwise {checks[c][1]}", flush=True)
    names = list(cands)
    times = {c: [] for c in names}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for c in (order if r % 2 == 0 else order[::-1]):
            times[c].append(time_both_modes(cands[c][0], warmup=5, reps=30).best.median_ms)
    c0 = statistics.median(times["compile"])
    for c in names:
        med = statistics.median(times[c])
        rounds = [x / y for x, y in zip(times[c], times["compile"])]
        res.append({"workload": name, "N": N, "cand": c, "ms": med, "vs_compile": med / c0, "per_round": rounds,
                    "rel_err": checks[c][0], "bitwise": checks[c][1], "rounds": times[c]})
        print(f"{name:12s} {c:22s} {med*1e3:7.2f} us x{med/c0:.4f} rounds {' '.join(f'{q:.3f}' for q in rounds)}", flush=True)
    del T, want; torch.cuda.empty_cache()
json.dump(res, open(a.out, "w"), indent=1)
