"""Diagnostic: which step of benchmarks/reduction.py's process slows the cluster kernel that times
faster alone? Times the kernel (run() in a CUDA graph, L2 flushed, median of 30) after each step:
nothing, the eager baseline, torch.compile, the Triton baseline, then reduction.py's own
bench_shape, then once more. Experiment driver, not shipped: `python history.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
import reduction as bench  # benchmarks/reduction.py
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

recs = []
for name, N, P in [("pearson_bwd", 65536, 8), ("wvar_bwd", 32768, 8)]:
    spec = BUILTIN[name]
    M = 4096
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    comp = spec.bytes.compulsory * M * N
    def ours(step):
        ms = time_gpu(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P),
                      warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        recs.append({"workload": name, "N": N, "P": P, "step": step, "ms": ms, "eff_tbps": comp / (ms * 1e-3) / 1e12})
        print(f"{name} {N} P={P} after {step:28s} {recs[-1]['eff_tbps']:.3f} TB/s", flush=True)
    ours("nothing")
    table = bench.baselines({"eager", "compile", "triton"})
    table["eager"][name](tensors, scalars); torch.cuda.synchronize()
    ours("eager baseline")
    f = table["compile"][name]
    f(tensors, scalars); torch.cuda.synchronize()
    ours("compile baseline (first call)")
    time_gpu(lambda: f(tensors, scalars), warmup=5, reps=30, graph=True, flush_l2=True)
    ours("compile baseline timed")
    t = table["triton"][name]
    time_gpu(lambda: t(tensors, scalars), warmup=5, reps=30, graph=True, flush_l2=True)
    ours("triton baseline timed")
    del tensors
    torch.cuda.empty_cache()
    recs_b = bench.bench_shape(name, M, N, {"compile", "triton", "cluster"}, {k: table[k] for k in ("compile", "triton")}, 30)
    for r in recs_b:
        if r["variant"] == "cluster" and r["P"] == P:
            recs.append({"workload": name, "N": N, "P": P, "step": "bench_shape (its own record)", "ms": r["ms"], "eff_tbps": r["eff_tbps"]})
            print(f"{name} {N} P={P} bench_shape record              {r['eff_tbps']:.3f} TB/s", flush=True)
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    ours("bench_shape, fresh inputs")
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
