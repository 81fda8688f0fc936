"""Diagnostic: is the slow mode (cluster kernels about 8 % slower in benchmarks/reduction.py than
alone) tied to inputs allocated after torch.cuda.empty_cache() hands memory back to the driver
(the benchmark empties the cache after every shape)? Allocate the inputs, time the cluster kernel,
a torch.add over the same inputs and the Triton baseline; then free, empty the cache (or not),
allocate again; four cycles each way. Experiment driver, not shipped: `python realloc.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
from triton_baselines import TRITON
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

recs = []
for name, N, P in [("wvar_bwd", 32768, 8), ("pearson_bwd", 65536, 8)]:
    spec = BUILTIN[name]
    M = 4096
    comp = spec.bytes.compulsory * M * N
    X = M * N * 4
    for mode in ("keep_cache", "empty_cache"):
        for cycle in range(4):
            tensors, scalars = example_inputs(name, M, N, device="cuda")
            ins = [tensors[a] for a in spec.inputs]
            o0 = torch.empty(M, N, device="cuda")
            tm = lambda fn: time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True).median_ms
            ours = tm(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P))
            add = tm(lambda: torch.add(ins[0], ins[1], out=o0))
            tri = tm(lambda: TRITON[name](tensors, scalars))
            rec = {"workload": name, "N": N, "P": P, "mode": mode, "cycle": cycle,
                   "in_ptrs": [hex(t.data_ptr()) for t in ins],
                   "ours_tbps": comp / (ours * 1e-3) / 1e12, "add_tbps": 3 * X / (add * 1e-3) / 1e12,
                   "triton_tbps": comp / (tri * 1e-3) / 1e12}
            recs.append(rec)
            print(f"{name} {N} {mode:11s} cycle {cycle} ours {rec['ours_tbps']:.3f} add {rec['add_tbps']:.3f} "
                  f"triton {rec['triton_tbps']:.3f} in {rec['in_ptrs']}", flush=True)
            del tensors, ins, o0
            if mode == "empty_cache":
                torch.cuda.empty_cache()
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
