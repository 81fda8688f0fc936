"""A/B timing of reduction variants (experiment driver, not shipped)."""
import argparse, json, sys, time
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import prepare, launch_args, legality, smem_per_cta
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

ROWS = {"layernorm_bwd": 2048}
ap = argparse.ArgumentParser()
ap.add_argument("--out"); ap.add_argument("--workloads", nargs="+"); ap.add_argument("--widths", nargs="+", type=int)
ap.add_argument("--tag", default="new"); ap.add_argument("--extra", action="store_true")
a = ap.parse_args()
recs = []
def variants(name):
    vs = []
    for P in (2, 4, 8, 16):
        for t in ((256, 512) if a.extra else (256,)):
            for pf in (False, True):
                kw = dict(threads=t, prefetch=pf)
                vs.append(Variant("cluster", P, **kw))
                if a.extra and name == "layernorm_bwd":
                    vs.append(Variant("cluster", P, columns_l2=True, **kw))
    for t in ((256, 512) if a.extra else (256,)):
        vs.append(Variant("staged", threads=t))
        if a.extra and name == "layernorm_bwd":
            vs.append(Variant("staged", threads=t, columns_l2=True))
    return vs
for name in a.workloads:
    spec = BUILTIN[name]
    for N in a.widths:
        M = ROWS.get(name, 4096)
        tensors, scalars = example_inputs(name, M, N, device="cuda")
        want = reference(spec, tensors, scalars)
        comp = spec.bytes.compulsory * M * N
        best = None
        for v in variants(name):
            if legality(spec, v, N, 232448, 16):
                continue
            prep = prepare(spec, tensors, scalars)
            fn = lambda: launch_args(spec, v, M, N, prep.args)
            try:
                fn(); torch.cuda.synchronize()
            except Exception as e:
                recs.append({"tag": a.tag, "workload": name, "N": N, "label": v.label, "error": str(e)[:200]}); continue
            err = max((relative_error(prep.outputs[k], w) for k, w in want.items() if prep.outputs[k].dtype != torch.int8), default=0.0)
            t = time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True)
            r = {"tag": a.tag, "workload": name, "M": M, "N": N, "label": v.label, "ms": t.median_ms,
                 "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "eff_tbps": comp / (t.median_ms * 1e-3) / 1e12, "rel_err": err}
            recs.append(r)
            if best is None or r["eff_tbps"] > best["eff_tbps"]: best = r
        print(f"{a.tag} {name:14s} {N:6d} best {best['label']:24s} {best['eff_tbps']:.2f}", flush=True)
        del tensors, want
        torch.cuda.empty_cache()
        json.dump(recs, open(a.out, "w"), indent=1)
