"""Diagnostic: after reduction.py's bench_shape (which lands the cluster kernel in its slow mode,
`history.py`), time the kernel with the standard L2 flush (a fresh 2 x L2 scratch written each
rep, as time_gpu does), a fixed written scratch, a read-only flush (sum over the scratch) and no
flush, three rounds each. Experiment driver, not shipped: `python flush_modes.py OUT.json`."""
import json, subprocess, sys
import torch
sys.path.insert(0, "benchmarks")
import reduction as bench
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

l2 = torch.cuda.get_device_properties(0).L2_cache_size
fixed = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")


def timed(fn, flush):
    g = torch.cuda.CUDAGraph()
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(30)]
    for s, e in ev:
        if flush:
            flush()
        s.record(); g.replay(); e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) for s, e in ev)
    return t[len(t) // 2]


recs = []
for name, N, P in [("wvar_bwd", 32768, 8), ("pearson_bwd", 65536, 8)]:
    spec = BUILTIN[name]
    M = 4096
    comp = spec.bytes.compulsory * M * N
    table = bench.baselines({"compile", "triton"})
    for r in bench.bench_shape(name, M, N, {"compile", "triton", "cluster"}, table, 30):
        if r["variant"] == "cluster" and r["P"] == P:
            recs.append({"workload": name, "step": "bench_shape record", "tbps": r["eff_tbps"]})
            print(f"{name} bench_shape record {r['eff_tbps']:.3f}", flush=True)
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    fn = lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P)
    for rnd in range(3):
        res = {"time_gpu (fresh written scratch)": time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True).median_ms,
               "fixed written scratch": timed(fn, lambda: fixed.fill_(1)),
               "read-only flush": timed(fn, lambda: fixed.sum()),
               "no flush": timed(fn, None)}
        for k, v in res.items():
            recs.append({"workload": name, "round": rnd, "step": k, "tbps": comp / (v * 1e-3) / 1e12})
        print(f"{name} round {rnd}: " + " | ".join(f"{k} {comp / (v * 1e-3) / 1e12:.3f}" for k, v in res.items()), flush=True)
    del tensors
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
print(subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
                     capture_output=True, text=True).stdout)
