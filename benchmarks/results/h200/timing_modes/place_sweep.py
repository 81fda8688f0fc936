"""Diagnostic: does a reduction kernel's time depend on where its arrays sit in memory? Inputs and
outputs are placed back to back inside one buffer with chosen gaps (fixed ones, then random
multiples of 256 B), and the cluster kernel and a plain torch streaming op over the same arrays
(control: torch.add of the first two inputs into the first output, or torch.mul for one input)
are timed at every placement. Experiment driver, not shipped: `python place_sweep.py OUT.json`."""
import json, random, sys
import torch
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

POINTS = [("pearson_bwd", 65536, 8), ("softmax_bwd", 65536, 8), ("wvar_bwd", 32768, 8),
          ("layernorm_bwd", 65536, 8)]
FIXED = [0, 4096, 65536, (1 << 20) + 4096, 3 << 20, 17 << 20]
rng = random.Random(7)
recs = []
for name, N, P in POINTS:
    spec = BUILTIN[name]
    M = 2048 if name == "layernorm_bwd" else 4096
    src, scalars = example_inputs(name, M, N, device="cuda")
    comp = spec.bytes.compulsory * M * N
    X = M * N * 4
    arrays = list(spec.inputs) + [o.name for o in spec.outputs]
    big = torch.empty(len(arrays) * X + (len(arrays) + 1) * (32 << 20), dtype=torch.uint8, device="cuda")
    placements = [("fixed", [g] * len(arrays)) for g in FIXED]
    placements += [("random", [rng.randrange(0, 24 << 20, 256) for _ in arrays]) for _ in range(10)]
    for kind, gaps in placements:
        pos, views = 0, {}
        for a, gap in zip(arrays, gaps):
            pos += gap
            views[a] = big[pos: pos + X].view(torch.float32).view(M, N)
            pos += X
        tensors = dict(src)
        for a in spec.inputs:
            views[a].copy_(src[a]); tensors[a] = views[a]
        out = {o.name: views[o.name] if o.dtype != "int8" else None for o in spec.outputs}
        ours = time_gpu(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P, out=out),
                        warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        ins = [views[a] for a in spec.inputs]
        o0 = views[spec.outputs[0].name]
        ctrl_fn = (lambda: torch.add(ins[0], ins[1], out=o0)) if len(ins) > 1 else (lambda: torch.mul(ins[0], 2.0, out=o0))
        ctrl = time_gpu(ctrl_fn, warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        ctrl_bytes = 3 * X if len(ins) > 1 else 2 * X
        rec = {"workload": name, "M": M, "N": N, "P": P, "placement": kind, "gaps": gaps,
               "ms": ours, "eff_tbps": comp / (ours * 1e-3) / 1e12,
               "control_ms": ctrl, "control_tbps": ctrl_bytes / (ctrl * 1e-3) / 1e12}
        recs.append(rec)
        print(f"{name:13s} {N} P={P} {kind:6s} gaps={[g // 4096 for g in gaps]}x4K ours={rec['eff_tbps']:.3f} "
              f"control={rec['control_tbps']:.3f}", flush=True)
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
    del big, src
print("\nper point: ours min/median/max TB/s | control min/median/max")
for name, N, P in POINTS:
    a = sorted(r["eff_tbps"] for r in recs if r["workload"] == name)
    c = sorted(r["control_tbps"] for r in recs if r["workload"] == name)
    print(f"{name:13s} {N} ours {a[0]:.3f} {a[len(a) // 2]:.3f} {a[-1]:.3f} | control {c[0]:.3f} {c[len(c) // 2]:.3f} {c[-1]:.3f}")
