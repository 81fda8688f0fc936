"""Twelfth session A/B round 3 (experiment driver, not shipped): plain stores (st: *p = v for
__stcs) in the cluster kernels and the non-cluster baselines at the points where the faster regs
kernels now beat the cluster kernels (8K) and at 16K / 64K, both timed in alternating rounds;
outputs poisoned, then checked against float64."""
import argparse, json, statistics
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, parameter_kinds, dynamic_smem_bytes, kernel_name
from smemkit.reduction import kernels as K
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.device import gpu_info


def edit(src, knobs):
    if "st" in knobs:
        src = src.replace("using namespace smemkit;", "using namespace smemkit;\n#define __stcs(p, v) (*(p) = (v))", 1)
    return src


def variant_of(label, N):
    if label.startswith("regs"):
        return K.regs_variant(N, int(label.split("_t")[1]) if "_t" in label else 1024)
    if label.startswith("cluster_p"):
        return Variant("cluster", int(label[9:]))
    from smemkit.reduction.codegen import parse_variant_name
    kind, threads, pf, rows = parse_variant_name(label)
    return Variant(kind, threads=threads, prefetch=pf, per_row=rows)


PLAN = {  # (workload, N): [baseline label of y4, cluster label]
    ("layernorm_bwd", 8192): ["regs_v4_t512", "cluster_p2"], ("pearson_bwd", 8192): ["reread_l2_t512_rows", "cluster_p2"],
    ("softmax_bwd", 8192): ["regs_v4_t512", "cluster_p2"], ("wvar_bwd", 8192): ["regs_v4_t512", "cluster_p2"],
    ("quant_int8", 8192): ["staged", "cluster_p2"], ("lars", 8192): ["reread_l2_t512_rows", "cluster_p2"],
    ("layernorm_bwd", 16384): ["reread_l2_t512_rows", "cluster_p4"], ("softmax_bwd", 16384): ["reread_l2_t512", "cluster_p4"],
    ("pearson_bwd", 16384): ["reread_l2_t512_rows", "cluster_p4"], ("wvar_bwd", 16384): ["staged", "cluster_p2"],
    ("layernorm_bwd", 65536): ["reread_l2", "cluster_p8"], ("softmax_bwd", 65536): ["reread_l2", "cluster_p8"],
    ("wvar_bwd", 65536): ["reread_l2", "cluster_p8"],
}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); a = ap.parse_args()
    from smemkit.runtime.timing import time_both_modes
    l2 = gpu_info(0).l2_bytes
    recs = []
    for (name, N), labels in PLAN.items():
        spec = BUILTIN[name]; M = 2048 if name == "layernorm_bwd" else 4096
        t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
        comp = spec.bytes.compulsory * M * N
        cands = {}
        for lab in labels:
            v = variant_of(lab, N)
            for ks in ("", "st"):
                n = kernel_name(spec, v)
                k = KernelModule(edit(K.kernel_source(spec, v), ks), f"{n}_{ks}").function(n, parameter_kinds(spec))
                smem = dynamic_smem_bytes(spec, v, N)
                grid = K._grid(spec, v, M, N, 0, k, smem, l2)
                prep = K.prepare(spec, t, s)
                cands[f"{v.label}:{ks or 'base'}"] = (lambda k=k, v=v, prep=prep, smem=smem, grid=grid: (k.launch(grid * v.P, v.threads, *prep.args, cluster=v.P, smem=smem, device=0), prep.outputs)[1])
        errs = {}
        for key, fn in cands.items():
            for o in fn().values():
                o.fill_(float("nan")) if o.dtype != torch.int8 else o.fill_(77)
            got = fn(); torch.cuda.synchronize()
            errs[key] = max((relative_error(got[o], w) for o, w in want.items() if got[o].dtype != torch.int8), default=0.0)
        times = {key: [] for key in cands}
        for rnd in range(3):
            for key, fn in (cands.items() if rnd % 2 == 0 else reversed(list(cands.items()))):
                times[key].append(time_both_modes(fn, warmup=5, reps=30).best.median_ms)
        line = []
        for key in cands:
            ms = statistics.median(times[key])
            recs.append({"workload": name, "M": M, "N": N, "cand": key, "ms_rounds": times[key], "ms": ms, "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": errs[key]})
            line.append(f"{key}={ms*1e3:.1f}")
        print(f"{name:13s} {N:6d} " + "  ".join(line) + f"  maxerr {max(errs.values()):.1e}", flush=True)
        del t, want; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)
