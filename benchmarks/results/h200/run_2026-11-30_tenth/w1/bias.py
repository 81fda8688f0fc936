"""Tenth session: why the calibration times regs_v4 baselines 1.5-6.1 % faster than the head to head
(v9). Same kernel, same launch path; what differs between the two phases is tested one at a time:
the launch helper (launch_args vs launch), the output buffers (a fresh prepare after other
allocations: addresses), what ran just before (a cluster kernel through run()), and the mode
(graph replays vs launches, both kept). SM clock / power are sampled by nvidia-smi in the driver."""
import json, sys, time
import torch
from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.api import non_cluster_variants, variant_from_label
from smemkit.reduction.calibrate import measure
from smemkit.reduction.kernels import launch, launch_args, prepare
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes

POINTS = [("layernorm_bwd", 2048, 4096), ("layernorm_bwd", 2048, 8192), ("pearson_bwd", 4096, 4096),
          ("quant_int8", 4096, 4096), ("softmax_bwd", 4096, 4096), ("wvar_bwd", 4096, 4096)]
T0 = time.time()


def tb(call):
    m = time_both_modes(call, warmup=3, reps=20)
    return {"graph": None if m.graph is None else m.graph.median_ms * 1e3, "launch": m.launch.median_ms * 1e3,
            "best": m.best.median_ms * 1e3, "t": round(time.time() - T0, 2)}


def addr(p):
    return {k: v.data_ptr() % (1 << 30) for k, v in p.outputs.items()}


out = sys.argv[1]; recs = []
limit = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
for name, M, N in POINTS:
    spec = BUILTIN[name]
    t, s = example_inputs(name, M, N, device="cuda")
    rec = {"workload": name, "M": M, "N": N, "t_start": round(time.time() - T0, 2)}
    measured, label = measure(spec, t, s)
    rec["calibration"] = {"label": label, "us": measured.baseline_ms * 1e3}
    v = variant_from_label(label, N)
    p1 = prepare(spec, t, s)
    rec["addr_p1"] = addr(p1)
    rec["launch_args_p1"] = tb(lambda: launch_args(spec, v, M, N, p1.args))
    rec["launch_p1"] = tb(lambda: launch(spec, v, p1))
    want = reference(spec, t, s)  # credit_eval holds this (float64, on the GPU) through the head to head
    rec["allocs"] = []
    pads = []
    for pad in (0, 1 << 20, 7 << 20, 33 << 20):
        pads.append(torch.empty(pad + 4096, dtype=torch.uint8, device="cuda"))
        pk = prepare(spec, t, s)
        rec["allocs"].append({"pad": pad, "addr": addr(pk), **tb(lambda pk=pk: launch(spec, v, pk))})
    rec["cluster_run_p2"] = tb(lambda: run(spec, t, s, variant="cluster", cluster_size=2))
    rec["after_cluster_p1"] = tb(lambda: launch(spec, v, p1))
    rec["candidates_p1"] = {c.label: tb(lambda c=c: launch_args(spec, c, M, N, p1.args))
                            for c in non_cluster_variants(spec, N, limit)}
    rec["again_p1"] = tb(lambda: launch(spec, v, p1))
    del want, pads
    recs.append(rec); json.dump(recs, open(out, "w"), indent=1)
    a = [x["best"] for x in rec["allocs"]]
    print(f"{name:14s} {N:6d} {label:14s} calib {rec['calibration']['us']:6.1f} | p1 args {rec['launch_args_p1']['best']:6.1f}"
          f" launch {rec['launch_p1']['best']:6.1f} (g {rec['launch_p1']['graph']:.1f} l {rec['launch_p1']['launch']:.1f})"
          f" | allocs {' '.join(f'{x:.1f}' for x in a)} | after cluster {rec['after_cluster_p1']['best']:6.1f}"
          f" again {rec['again_p1']['best']:6.1f} | cand {rec['candidates_p1'][label]['best']:6.1f}", flush=True)
