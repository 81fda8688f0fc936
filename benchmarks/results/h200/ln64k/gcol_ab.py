"""A/B: layernorm_bwd's cluster kernels with gamma's slice staged in shared memory (shipped) vs
read from global memory / L2 in every pass (Variant(stage_columns=False): 2/3 of the shared memory,
so 3 CTAs per SM at P = 8), and P = 16 built for 4 CTAs per SM. Experiment driver, not shipped:
`python gcol_ab.py OUT.json`. Each variant's outputs are poisoned and checked against float64;
CUDA graphs, L2 flushed, median of 40, two rounds (A B A B order) to see the noise."""
import json, sys
import torch
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.codegen import Variant, dynamic_smem_bytes
from smemkit.reduction.kernels import prepare, launch_args, legality, resident_clusters, compiled_kernel
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

spec = BUILTIN["layernorm_bwd"]
M = 2048
VARIANTS = []
for P in (2, 4, 8, 16):
    for sc in (True, False):
        VARIANTS.append(Variant("cluster", P, stage_columns=sc))
VARIANTS += [Variant("cluster", 16, ctas_per_sm=4), Variant("cluster", 16, stage_columns=False, ctas_per_sm=4),
             Variant("cluster", 8, prefetch=True), Variant("cluster", 8, prefetch=True, stage_columns=False),
             Variant("cluster", 8, stage_columns=False, ctas_per_sm=3)]
recs = []
for N in (16384, 32768, 65536):
    tensors, scalars = example_inputs("layernorm_bwd", M, N, device="cuda")
    want = reference(spec, tensors, scalars)
    comp = spec.bytes.compulsory * M * N
    for rnd in range(2):
        row = []
        for v in VARIANTS:
            if legality(spec, v, N, 232448, 16):
                continue
            prep = prepare(spec, tensors, scalars)
            for o in prep.outputs.values():
                o.fill_(float("nan"))
            fn = lambda: launch_args(spec, v, M, N, prep.args)
            fn(); torch.cuda.synchronize()
            err = max(relative_error(prep.outputs[k], want[k]) for k in prep.outputs)
            t = time_gpu(fn, warmup=5, reps=40, graph=True, flush_l2=True)
            smem = dynamic_smem_bytes(spec, v, N)
            res = resident_clusters(compiled_kernel(spec, v), v, smem, 0)
            r = {"round": rnd, "N": N, "M": M, "label": v.label, "P": v.P, "ms": t.median_ms,
                 "eff_tbps": comp / (t.median_ms * 1e-3) / 1e12, "rel_err": err,
                 "resident_clusters": res, "resident_ctas": res * v.P, "dyn_smem": smem}
            recs.append(r)
            row.append(f"{v.label}={r['eff_tbps']:.2f}({r['resident_ctas']})")
            assert err < 1e-5, (v.label, err)
        print(f"N={N} round {rnd}: " + " ".join(row), flush=True)
        json.dump(recs, open(sys.argv[1], "w"), indent=1)
best = {}
for r in recs:
    k = (r["N"], r["label"])
    best.setdefault(k, []).append(r["eff_tbps"])
print("\nmedian of rounds, TB/s:")
for N in (16384, 32768, 65536):
    print(N, " ".join(f"{l}={sum(v)/len(v):.2f}" for (n, l), v in best.items() if n == N))
