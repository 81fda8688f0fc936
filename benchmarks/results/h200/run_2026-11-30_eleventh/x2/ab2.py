"""Eleventh session A/B (experiment driver, not shipped).
--mode sw: staged / cluster kernels with and without split_wait (per-input staging barriers), in
one process, alternating rounds; every output checked against float64.
--mode reread: the re-read kernels' times (this tree's header: last-use loads demote their L2
line, or the old tree's), run by two processes alternately; plus the leftover probe of l2left."""
import argparse, json, statistics
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import prepare, launch_args, legality
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.device import gpu_info
from smemkit.runtime.timing import time_both_modes

ap = argparse.ArgumentParser()
ap.add_argument("--mode"); ap.add_argument("--out"); ap.add_argument("--tag", default="")
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
ROWS = {"layernorm_bwd": 2048}
WL = ["layernorm_bwd", "wvar_bwd", "pearson_bwd", "softmax_bwd", "lars", "quant_int8"]
limit = gpu_info(0).smem_per_block_optin
recs = []


def err_of(spec, prep, want):
    return max((relative_error(prep.outputs[k], w) for k, w in want.items()
                if prep.outputs[k].dtype != torch.int8), default=0.0)


if a.mode == "sw":
    widths = (16384, 32768, 65536)
    for name in WL:
        spec = BUILTIN[name]
        for N in widths:
            M = ROWS.get(name, 4096)
            t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
            comp = spec.bytes.compulsory * M * N
            pairs = []
            for base in [Variant("staged")] + [Variant("cluster", P) for P in (2, 4, 8)]:
                if legality(spec, base, N, limit, 16):
                    continue
                pairs.append((base, Variant(base.kind, base.P, split_wait=True)))
            best = {}
            for rnd in range(a.rounds):
                for pair in pairs:
                    for v in (pair if rnd % 2 == 0 else pair[::-1]):
                        prep = prepare(spec, t, s)
                        for o in prep.outputs.values():
                            o.fill_(7 if o.dtype == torch.int8 else float("nan"))
                        fn = lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args)
                        fn(); torch.cuda.synchronize()
                        e = err_of(spec, prep, want)
                        ms = time_both_modes(fn, warmup=3, reps=20).best.median_ms
                        recs.append({"workload": name, "N": N, "M": M, "label": v.label, "round": rnd, "ms": ms,
                                     "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": e})
            json.dump(recs, open(a.out, "w"), indent=1)
            med = {}
            for r in recs:
                if r["workload"] == name and r["N"] == N:
                    med.setdefault(r["label"], []).append(r["tbps"])
            row = "  ".join(f"{k}:{statistics.median(v):.3f}" for k, v in med.items())
            errs = max(r["rel_err"] for r in recs if r["workload"] == name and r["N"] == N)
            print(f"{name:14s} {N:6d} maxerr {errs:.1e} {row}", flush=True)
            del t, want; torch.cuda.empty_cache()

if a.mode == "reread":
    vs = [Variant("reread"), Variant("reread", threads=512), Variant("reread_l2"),
          Variant("reread_l2", threads=512, per_row=True)]
    for name in WL:
        spec = BUILTIN[name]
        for N in (4096, 8192, 16384, 32768, 65536):
            M = ROWS.get(name, 4096)
            t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
            comp = spec.bytes.compulsory * M * N
            out = []
            for v in vs:
                prep = prepare(spec, t, s)
                fn = lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args)
                try:
                    fn(); torch.cuda.synchronize()
                except Exception as ex:
                    continue
                e = err_of(spec, prep, want)
                ms = time_both_modes(fn, warmup=3, reps=20).best.median_ms
                recs.append({"tag": a.tag, "workload": name, "N": N, "label": v.label, "ms": ms,
                             "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": e})
                out.append(f"{v.label}:{recs[-1]['tbps']:.3f}")
            print(f"{a.tag} {name:14s} {N:6d} " + " ".join(out), flush=True)
            del t, want; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)
