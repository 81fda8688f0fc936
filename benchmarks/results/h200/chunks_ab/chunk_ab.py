"""A/B timing: row buffer refilled part by part (chunks) vs whole (experiment driver, not shipped)."""
import argparse, json
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import prepare, launch_args, legality
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

ROWS = {"layernorm_bwd": 2048}
ap = argparse.ArgumentParser()
ap.add_argument("--out"); ap.add_argument("--workloads", nargs="+"); ap.add_argument("--widths", nargs="+", type=int)
ap.add_argument("--chunks", nargs="+", type=int, default=[0, 2, 4, 8])
ap.add_argument("--threads", nargs="+", type=int, default=[256])
a = ap.parse_args()
recs = []
def variants():
    for c in a.chunks:
        for t in a.threads:
            yield Variant("staged", threads=t, chunks=c)
            for P in (2, 4, 8, 16):
                yield Variant("cluster", P, threads=t, chunks=c)
for name in a.workloads:
    spec = BUILTIN[name]
    for N in a.widths:
        M = ROWS.get(name, 4096)
        tensors, scalars = example_inputs(name, M, N, device="cuda")
        want = reference(spec, tensors, scalars)
        comp = spec.bytes.compulsory * M * N
        best = {}
        for v in variants():
            if legality(spec, v, N, 232448, 16):
                continue
            prep = prepare(spec, tensors, scalars)
            fn = lambda: launch_args(spec, v, M, N, prep.args)
            try:
                fn(); torch.cuda.synchronize()
            except Exception as e:
                recs.append({"workload": name, "N": N, "label": v.label, "error": str(e)[:200]}); continue
            err = max((relative_error(prep.outputs[k], w) for k, w in want.items() if prep.outputs[k].dtype != torch.int8), default=0.0)
            t = time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True)
            r = {"workload": name, "M": M, "N": N, "label": v.label, "kind": v.kind, "P": v.P, "chunks": v.chunks,
                 "threads": v.threads, "ms": t.median_ms, "p20_ms": t.p20_ms, "p80_ms": t.p80_ms,
                 "eff_tbps": comp / (t.median_ms * 1e-3) / 1e12, "rel_err": err}
            recs.append(r)
            key = (v.kind, v.chunks)
            if key not in best or r["eff_tbps"] > best[key]["eff_tbps"]:
                best[key] = r
        line = " ".join(f"{k[0][:2]}c{k[1]}={b['eff_tbps']:.2f}(P{b['P']})" for k, b in sorted(best.items()))
        print(f"{name:14s} {N:6d} {line}", flush=True)
        del tensors, want
        torch.cuda.empty_cache()
        json.dump(recs, open(a.out, "w"), indent=1)
