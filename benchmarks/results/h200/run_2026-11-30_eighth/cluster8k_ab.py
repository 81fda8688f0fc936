"""A/B at the close 8K points (issue 4's two false "yes": layernorm_bwd and pearson_bwd 8K, cluster
2-3 % slower): cluster kernels at P = 2, 4 x 128 / 256 / 512 threads x prefetch off / on against
the best non-cluster kernel of the credit evaluation, same run, two rounds in rotated order.
Experiment driver, not shipped: `python cluster8k_ab.py OUT.json`. Outputs poisoned and checked
against float64; time_both_modes (graph replays and launches, L2 flushed, median of 20, best mode)
as credit_eval.py."""
import json, sys, time
import torch
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.api import variant_from_label
from smemkit.reduction.codegen import Variant, generate as gen0
from smemkit.reduction.kernels import prepare, launch_args, legality
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes

def gen(spec, v):
    src = gen0(spec, v)
    if v.kind == "cluster" and v.threads == 512:
        src = src.replace("__launch_bounds__(THREADS, 1)", "__launch_bounds__(THREADS, 2)")
    return src
kernels.generate = gen
kernels.compiled_kernel.cache_clear(); kernels._RESIDENT.clear()
POINTS = [("layernorm_bwd", 2048, 8192, "regs_v4_t512"), ("pearson_bwd", 4096, 8192, "reread_l2_t512_rows"),
          ("softmax_bwd", 4096, 8192, "staged"), ("wvar_bwd", 4096, 8192, "staged"),
          ("layernorm_bwd", 2048, 16384, "reread_l2_t512"), ("pearson_bwd", 4096, 16384, "reread_l2")]
t0 = time.time()
recs = []
for name, M, N, base in POINTS:
    spec = BUILTIN[name]
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    want = reference(spec, tensors, scalars)
    comp = spec.bytes.compulsory * M * N
    variants = [("base:" + base, variant_from_label(base, N))]
    for P in (2, 4):
        for T in (128, 256, 512):
            for pf in (False, True):
                v = Variant("cluster", P, threads=T, prefetch=pf)
                if legality(spec, v, N, 232448, 16) is None:
                    variants.append((v.label, v))
    for rnd in range(2):
        order = variants[rnd::] + variants[:rnd] if rnd == 0 else list(reversed(variants))
        for label, v in order:
            prep = prepare(spec, tensors, scalars)
            for o in prep.outputs.values():
                o.fill_(float("nan") if o.is_floating_point() else 77)
            fn = lambda: launch_args(spec, v, M, N, prep.args)
            try:
                fn(); torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(name, N, label, "FAILED", e, flush=True)
                continue
            err = max(relative_error(prep.outputs[k], want[k]) for k in prep.outputs)
            ms = time_both_modes(fn, warmup=3, reps=20).best.median_ms
            recs.append({"round": rnd, "workload": name, "M": M, "N": N, "label": label, "ms": ms,
                         "eff_tbps": comp / (ms * 1e-3) / 1e12, "err": err, "ok": err < 1e-5})
        json.dump({"records": recs, "elapsed_s": time.time() - t0}, open(sys.argv[1], "w"), indent=1)
    agg = {}
    for r in recs:
        if r["workload"] == name and r["N"] == N:
            agg.setdefault(r["label"], []).append(r["ms"])
    b = sum(agg["base:" + base]) / 2
    row = sorted(((sum(v) / len(v), k) for k, v in agg.items()))
    print(f"{name:14s} {N:6d} base {base} {b*1e3:.1f} us | " + " ".join(f"{k}={m*1e3:.1f}({b/m:.3f})" for m, k in row[:6]), flush=True)
print("elapsed", time.time() - t0)
