"""Diagnostic: is the cluster kernels' slow mode inside reduction.py's bench_shape a clock state?
Runs bench_shape (wvar_bwd 32K) with nvidia-smi sampling SM clock, power and throttle reasons
every 50 ms in the background, printing wall-clock marks for each phase; then times the kernel
alone, after 3 s idle. Experiment driver, not shipped: `python clock_trace.py OUT_DIR`."""
import json, subprocess, sys, time
import torch
sys.path.insert(0, "benchmarks")
import reduction as bench
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

out = sys.argv[1]
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                        "temperature.memory,clocks_event_reasons.active", "--format=csv,noheader", "-lms", "50"],
                       stdout=open(f"{out}/smi_trace.csv", "w"))
marks = []
mark = lambda what: (marks.append((time.time(), what)), print(f"{time.time():.3f} {what}", flush=True))
time.sleep(1)
name, N, P, M = "wvar_bwd", 32768, 8, 4096
spec = BUILTIN[name]
comp = spec.bytes.compulsory * M * N
orig_time_gpu = bench.time_gpu


def traced(fn, **kw):
    mark(f"time_gpu start graph={kw.get('graph', False)}")
    t = orig_time_gpu(fn, **kw)
    mark(f"time_gpu end {t.median_ms * 1e3:.1f} us")
    return t


bench.time_gpu = traced
table = bench.baselines({"compile", "triton"})
mark("bench_shape start")
recs = bench.bench_shape(name, M, N, {"compile", "triton", "cluster"}, table, 30)
mark("bench_shape end")
for r in recs:
    print(r["variant"], r["P"], round(r["eff_tbps"], 3) if r["eff_tbps"] else None)
time.sleep(3)
tensors, scalars = example_inputs(name, M, N, device="cuda")
mark("alone start")
t = time_gpu(lambda: run(spec, tensors, scalars, variant="cluster", cluster_size=P), warmup=5, reps=30, graph=True,
             flush_l2=True)
mark(f"alone end {t.median_ms * 1e3:.1f} us = {comp / (t.median_ms * 1e-3) / 1e12:.3f} TB/s")
time.sleep(0.5)
smi.terminate()
json.dump({"marks": marks, "records": recs}, open(f"{out}/clock_trace.json", "w"), indent=1)
