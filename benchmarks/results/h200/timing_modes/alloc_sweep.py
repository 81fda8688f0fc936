"""Diagnostic: the same cluster kernel times bimodally (about 8 % apart) across processes and
output allocations. For fresh output allocations (separate cudaMallocs, with random-sized
allocations kept alive in between to move them), time the cluster kernel writing into them and a
plain torch streaming op (torch.add of two inputs into the same output) over the same arrays.
Experiment driver, not shipped: `python alloc_sweep.py OUT.json`."""
import json, random, sys
import torch
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

rng = random.Random(11)
recs, keep = [], []
for name, N, P in [("wvar_bwd", 32768, 8), ("pearson_bwd", 65536, 8)]:
    spec = BUILTIN[name]
    M = 4096
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    comp = spec.bytes.compulsory * M * N
    ins = [tensors[a] for a in spec.inputs]
    for k in range(8):
        keep.append(torch.empty(rng.randrange(1, 600) << 20, dtype=torch.uint8, device="cuda"))
        out = {o.name: torch.empty(M, N, device="cuda") for o in spec.outputs}
        o0 = out[spec.outputs[0].name]
        ours = time_gpu(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P, out=out),
                        warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        ctrl = time_gpu(lambda: torch.add(ins[0], ins[1], out=o0), warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        fill = time_gpu(lambda: o0.fill_(1.0), warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        ours2 = time_gpu(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P, out=out),
                         warmup=5, reps=30, graph=True, flush_l2=True).median_ms
        X = M * N * 4
        rec = {"workload": name, "N": N, "P": P, "alloc": k, "out_ptrs": {a: hex(t.data_ptr()) for a, t in out.items()},
               "ours_tbps": comp / (ours * 1e-3) / 1e12, "ours_again_tbps": comp / (ours2 * 1e-3) / 1e12,
               "add_tbps": 3 * X / (ctrl * 1e-3) / 1e12, "fill_tbps": X / (fill * 1e-3) / 1e12}
        recs.append(rec)
        print(f"{name} {N} alloc {k} out {rec['out_ptrs']} ours {rec['ours_tbps']:.3f} / {rec['ours_again_tbps']:.3f} "
              f"add {rec['add_tbps']:.3f} fill {rec['fill_tbps']:.3f}", flush=True)
        del out, o0
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
    del tensors, ins
