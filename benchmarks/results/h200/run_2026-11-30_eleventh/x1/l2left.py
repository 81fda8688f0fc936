"""Next session: do smemkit's re-read kernels leave evict_last lines in L2 after they finish?
Per workload at 4K / 16K: run one non-cluster kernel on the inputs, then (with or without
cuCtxResetPersistingL2Cache) the 2 x L2 flush, then time a plain read of the first input
(tests/gpu/kernels/l2_keep_read.cu). Leftover lines show as a faster read without the reset.
Also: layernorm_bwd 8K's regs_v4_t512 timed (time_both_modes, with the reset) right after the
candidate loop and right after a cluster kernel, three rounds (w8 had the calibration 2.9 % fast)."""
import json, statistics, sys
from pathlib import Path
import torch
from cuda.bindings import driver
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.api import non_cluster_variants
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import launch, launch_args, prepare, regs_variant
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

MOD = KernelModule(Path("tests/gpu/kernels/l2_keep_read.cu").read_text(), "l2_keep_read")
PLAIN = MOD.function("read_plain", ("ptr", "i64", "ptr"))
SMS = gpu_info(0).sm_count
scratch = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
sink = torch.zeros(1, device="cuda")


def reset():
    torch.cuda.synchronize(); (err,) = driver.cuCtxResetPersistingL2Cache(); assert int(err) == 0, err


def probe(x, before, with_reset, reps=15):
    ts = []
    for _ in range(reps):
        reset(); scratch.fill_(1)
        before()
        if with_reset:
            reset()
        scratch.fill_(1)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); PLAIN.launch(SMS * 8, 256, x, x.numel() // 4, sink); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


out = sys.argv[1]; res = {"leftover": [], "ln8k": []}
limit = gpu_info(0).smem_per_block_optin
for name in ("layernorm_bwd", "softmax_bwd", "lars"):
    for N in (4096, 16384):
        spec = BUILTIN[name]; M = 2048 if name == "layernorm_bwd" else 4096
        t, s = example_inputs(name, M, N, device="cuda"); prep = prepare(spec, t, s)
        x = t[spec.inputs[0]]
        for v in [Variant("reread_l2"), Variant("reread_l2", threads=512, per_row=True), Variant("reread", threads=512), Variant("staged")]:
            try:
                launch(spec, v, prep); torch.cuda.synchronize()
            except Exception:
                continue
            call = lambda v=v: launch(spec, v, prep)
            r = {"workload": name, "N": N, "variant": v.label, "none": probe(x, lambda: None, False),
                 "after": probe(x, call, False), "after_reset": probe(x, call, True)}
            res["leftover"].append(r); json.dump(res, open(out, "w"), indent=1)
            print(f"{name:14s} {N:6d} {v.label:22s} probe: nothing {r['none']:7.1f}  after {r['after']:7.1f}  after+reset {r['after_reset']:7.1f} us", flush=True)
        del t, prep

spec = BUILTIN["layernorm_bwd"]; M, N = 2048, 8192
t, s = example_inputs("layernorm_bwd", M, N, device="cuda"); prep = prepare(spec, t, s)
v = regs_variant(N, 512)
tb = lambda: launch_args(spec, v, M, N, prep.args)
for rnd in range(3):
    for c in non_cluster_variants(spec, N, limit):
        time_both_modes(lambda c=c: launch_args(spec, c, M, N, prep.args), warmup=3, reps=20)
    after_loop = time_both_modes(tb, warmup=3, reps=20).best.median_ms * 1e3
    time_both_modes(lambda: run(spec, t, s, variant="cluster", cluster_size=2), warmup=3, reps=20)
    after_cluster = time_both_modes(tb, warmup=3, reps=20).best.median_ms * 1e3
    res["ln8k"].append({"after_loop": after_loop, "after_cluster": after_cluster})
    json.dump(res, open(out, "w"), indent=1)
    print(f"layernorm_bwd 8K regs_v4_t512 round {rnd}: after candidates {after_loop:.1f} us, after cluster {after_cluster:.1f} us", flush=True)
