"""Eleventh session A/B (experiment driver, not shipped): max.NaN / min.NaN against compare+select
in nan_max / nan_min. Times the kernels of the workloads that use them, this tree vs the old one
(PYTHONPATH decides), every output checked against float64."""
import argparse, json
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import prepare, launch_args, legality, regs_variant
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.device import gpu_info
from smemkit.runtime.timing import time_both_modes

ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--tag"); a = ap.parse_args()
limit = gpu_info(0).smem_per_block_optin
recs = []
for name in ("quant_int8", "softmax_bwd", "lars"):
    spec = BUILTIN[name]
    for N in (4096, 16384, 32768, 65536):
        M = 4096
        t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
        comp = spec.bytes.compulsory * M * N
        vs = [Variant("staged"), Variant("reread_l2"), Variant("reread", threads=512)] + [Variant("cluster", P) for P in (2, 4, 8)]
        if N <= 8192:
            vs.append(regs_variant(N, 256))
        line = []
        for v in vs:
            if legality(spec, v, N, limit, 16):
                continue
            prep = prepare(spec, t, s)
            fn = lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args)
            fn(); torch.cuda.synchronize()
            e = max((relative_error(prep.outputs[k], w) for k, w in want.items() if prep.outputs[k].dtype != torch.int8), default=0.0)
            q = max(((prep.outputs[k].int() - w.int()).abs().max().item() for k, w in want.items() if prep.outputs[k].dtype == torch.int8), default=0)
            ms = time_both_modes(fn, warmup=3, reps=20).best.median_ms
            recs.append({"tag": a.tag, "workload": name, "N": N, "label": v.label, "ms": ms, "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": e, "int8_diff": q})
            line.append(f"{v.label}:{recs[-1]['tbps']:.2f}")
        print(f"{a.tag} {name:12s} {N:6d} " + " ".join(line), flush=True)
        del t, want; torch.cuda.empty_cache()
json.dump(recs, open(a.out, "w"), indent=1)
