"""Ninth session: the close calls of the CREDIT evaluation, head to head. At each point decided by
< 2.5 % in v6 / v7, T_B's kernel (the embedded table's label) and the best cluster kernel are timed
in alternating rounds (time_both_modes each, as credit_eval times them); per-round ratios show
whether the winner is a property of the point or of the run."""
import json, sys
import torch
from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.api import variant_from_label
from smemkit.reduction.kernels import launch, prepare
from smemkit.reduction.reference import relative_error
from smemkit.reduction.tables import h200_smemkit
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes

POINTS = [("layernorm_bwd", 8192), ("pearson_bwd", 8192), ("wvar_bwd", 4096), ("wvar_bwd", 8192),
          ("softmax_bwd", 8192), ("quant_int8", 16384), ("lars", 8192)]
ROUNDS = 6
out = sys.argv[1]; recs = []
table = {(p.workload, p.shape.N): p for p in h200_smemkit()}
for name, N in POINTS:
    p = table[(name, N)]; spec = BUILTIN[name]; M = p.shape.M
    P = min(p.cluster_ms, key=p.cluster_ms.get)
    base_v = variant_from_label(p.measured.baseline_variant, N)
    t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
    prep = prepare(spec, t, s)
    fb = lambda: launch(spec, base_v, prep)
    fc = lambda: run(spec, t, s, variant="cluster", cluster_size=P)
    fb(); got = fc(); torch.cuda.synchronize()
    err = max(relative_error(got[k], w) for k, w in want.items() if got[k].dtype != torch.int8)
    err_b = max(relative_error(prep.outputs[k], w) for k, w in want.items() if prep.outputs[k].dtype != torch.int8)
    rounds = []
    for r in range(ROUNDS):
        order = [("base", fb), ("cluster", fc)] if r % 2 == 0 else [("cluster", fc), ("base", fb)]
        ms = {k: time_both_modes(f, warmup=3, reps=20).best.median_ms for k, f in order}
        rounds.append(ms)
    ratios = [x["base"] / x["cluster"] for x in rounds]
    rec = {"workload": name, "M": M, "N": N, "baseline": base_v.label, "P": P, "rounds": rounds,
           "ratios": ratios, "cluster_wins": sum(q > 1 for q in ratios), "rel_err": [err_b, err],
           "table_ratio": p.measured.baseline_ms / p.cluster_ms[P]}
    recs.append(rec); json.dump(recs, open(out, "w"), indent=1)
    print(f"{name:14s} {N:6d} {base_v.label:20s} vs cluster P={P}: T_B/cluster per round "
          + " ".join(f"{q:.3f}" for q in ratios) + f"  cluster wins {rec['cluster_wins']}/{ROUNDS}"
          + f"  (v7 table {rec['table_ratio']:.3f})", flush=True)
