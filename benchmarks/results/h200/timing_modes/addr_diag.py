"""Diagnostic: why do the same cluster kernels time 8-9 % slower in benchmarks/reduction.py than in
refill_ab.py at some points? Times one kernel per point several ways in one process: the
benchmark's way (run() captured in a CUDA graph, outputs allocated inside the capture), run()
with outputs preallocated, and outputs placed at byte offsets inside one buffer; also fresh
inputs. Experiment driver, not shipped: `python addr_diag.py OUT.json`."""
import json, sys, time
import torch
from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

POINTS = [("wvar_bwd", 32768, 8), ("pearson_bwd", 65536, 8), ("softmax_bwd", 65536, 8), ("lars", 65536, 8),
          ("layernorm_bwd", 65536, 8), ("quant_int8", 65536, 4), ("wvar_bwd", 16384, 4), ("softmax_bwd", 32768, 4)]
OFFSETS = [0, 4096, 65536, 1 << 20, 2 << 20, 3 << 20, 8 << 20, 32 << 20]
recs = []
t0 = time.time()


def t(fn):
    return min(time_gpu(fn, warmup=5, reps=30, graph=True, flush_l2=True).median_ms for _ in range(2))


for name, N, P in POINTS:
    spec = BUILTIN[name]
    M = 2048 if name == "layernorm_bwd" else 4096
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    comp = spec.bytes.compulsory * M * N
    res = {}
    call = lambda out=None, tens=tensors: run(spec, tens, scalars, variant="cluster", cluster_size=P, out=out)
    res["bench_alloc_in_graph"] = t(lambda: call())
    outs = {k: torch.empty_like(v) for k, v in call().items()}
    res["prealloc"] = t(lambda: call(outs))
    want = reference(spec, tensors, scalars)
    got = call(outs); torch.cuda.synchronize()
    err = max((relative_error(got[k], want[k]) if got[k].is_floating_point() else
               float((got[k].double() - want[k]).abs().max())) for k in got)
    big = {k: torch.empty(v.numel() * v.element_size() + (64 << 20), dtype=torch.uint8, device="cuda")
           for k, v in outs.items()}
    for off in OFFSETS:
        o = {k: big[k][off: off + v.numel() * v.element_size()].view(v.dtype).view(v.shape) for k, v in outs.items()}
        res[f"out_offset_{off}"] = t(lambda o=o: call(o))
    del big
    fresh, _ = example_inputs(name, M, N, device="cuda")
    res["fresh_inputs_prealloc"] = t(lambda: call(outs, fresh))
    ptrs = {k: v.data_ptr() for k, v in {**tensors, **outs}.items() if torch.is_tensor(v)}
    recs.append({"workload": name, "M": M, "N": N, "P": P, "err": err, "ms": res, "ptrs": ptrs,
                 "tbps": {k: comp / (v * 1e-3) / 1e12 for k, v in res.items()}})
    print(f"{name:13s} {N:6d} P={P} err={err:.1e} " + " ".join(f"{k.replace('out_offset_', 'o')}={comp / (v * 1e-3) / 1e12:.2f}"
                                                for k, v in res.items()) + f" [{time.time() - t0:.0f}s]", flush=True)
    json.dump(recs, open(sys.argv[1], "w"), indent=1)
    del tensors, fresh, outs, want, got
