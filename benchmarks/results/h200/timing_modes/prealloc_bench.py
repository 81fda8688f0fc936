"""Diagnostic: inside reduction.py's bench_shape the graph-replayed cluster kernels time 5-9 %
slower than their eager launches (ms vs ms_with_launch in every full run). Run bench_shape twice
for wvar_bwd 32K and pearson_bwd 64K: as shipped (run() allocates its outputs, inside the graph
pool when captured), then with run() given preallocated outputs (allocated once, outside any
capture). Experiment driver, not shipped: `python prealloc_bench.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
import reduction as bench
from smemkit.reduction import run

recs = []
table = None
for name, N in [("wvar_bwd", 32768), ("pearson_bwd", 65536)]:
    for mode in ("shipped", "prealloc"):
        cache = {}
        if mode == "prealloc":
            def patched(spec, tensors, scalars, variant=None, cluster_size=None):
                key = (spec.name, variant, cluster_size)
                if key not in cache:
                    cache[key] = {k: v.clone() for k, v in run(spec, tensors, scalars, variant=variant,
                                                                 cluster_size=cluster_size).items()}
                return run(spec, tensors, scalars, variant=variant, cluster_size=cluster_size, out=cache[key])
            bench.run = patched
        else:
            bench.run = run
        table = table or bench.baselines({"compile", "triton"})
        for r in bench.bench_shape(name, 4096, N, {"compile", "triton", "cluster", "reread_l2"}, table, 30):
            if r["ms"]:
                r["mode"] = mode
                recs.append(r)
                print(f"{name} {N} {mode:8s} {r['variant']:10s} P={r['P']:2d} graph {r['ms'] * 1e3:7.1f} eager "
                      f"{r['ms_with_launch'] * 1e3:7.1f} us  ratio {r['ms_with_launch'] / r['ms']:.3f} err {r['rel_err']:.1e}",
                      flush=True)
        cache.clear()
        torch.cuda.empty_cache()
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
