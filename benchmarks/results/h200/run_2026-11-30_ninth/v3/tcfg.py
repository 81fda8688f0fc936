"""Ninth session: smemkit's Triton kernels at each fixed (BLOCK, num_warps), 4K and 8K, all six
workloads (what dispatch_config should be); every output checked against float64."""
import json, sys
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.reference import relative_error
from smemkit.reduction.triton_kernels import TRITON, _DEFAULT_CONFIGS
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes
out = sys.argv[1]; recs = []
for name in sorted(BUILTIN):
    spec = BUILTIN[name]; M = 2048 if name == "layernorm_bwd" else 4096
    for N in (4096, 8192):
        t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
        cfgs = [c for c in _DEFAULT_CONFIGS if c[0] <= max(1024, N)] + [None]
        for rnd, order in enumerate((cfgs, cfgs[::-1])):
            for cfg in order:
                fn = lambda c=cfg: TRITON[name](t, s, config=c)
                got = fn(); torch.cuda.synchronize()
                err = max(relative_error(got[k], w) for k, w in want.items() if got[k].dtype != torch.int8)
                ms = time_both_modes(fn, warmup=5, reps=30).best.median_ms
                recs.append({"workload": name, "M": M, "N": N, "config": cfg, "round": rnd, "ms": ms,
                             "tbps": spec.bytes.compulsory * M * N / ms / 1e9, "rel_err": err})
        json.dump(recs, open(out, "w"), indent=1)
        rows = {}
        for r in recs:
            if r["workload"] == name and r["N"] == N:
                rows.setdefault(str(r["config"]), []).append(r["ms"])
        line = " ".join(f"{k}:{min(v)*1e3:.1f}" for k, v in sorted(rows.items(), key=lambda kv: min(kv[1])))
        print(f"{name:14s} {N:5d} {line}", flush=True)
