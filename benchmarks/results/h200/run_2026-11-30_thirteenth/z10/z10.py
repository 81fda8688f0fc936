"""Thirteenth session, call 10: bisect the ring's ~3 % slowdown under timing's persisting-L2 reset
inside offload_ops (z6) that z7 / z8 did not reproduce outside it. offload_ops imported as a
module and run on two host-bound points, variant by argv[1]:
  a: as main; b: the reset replaced by a synchronize; e: reset kept, timed()'s sizing probe
  removed; f: reset kept, the probe's time_gpu call made without the reset."""
import importlib.util, sys
import torch
import smemkit.runtime.timing as timing

variant, out = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("offload_ops", "benchmarks/offload_ops.py")
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
real_reset = timing._reset_persisting_l2
if variant == "b":
    timing._reset_persisting_l2 = torch.cuda.synchronize
elif variant in ("e", "f"):
    real_time_gpu = timing.time_gpu

    def patched(fn, **kw):
        if kw.get("reps") == 1 and kw.get("warm_ms") == 0:  # the sizing probe
            if variant == "e":
                return timing.Timing(median_ms=1.0, p20_ms=1.0, p80_ms=1.0, samples=1)
            timing._reset_persisting_l2 = torch.cuda.synchronize
            try:
                return real_time_gpu(fn, **kw)
            finally:
                timing._reset_persisting_l2 = real_reset
        return real_time_gpu(fn, **kw)
    timing.time_gpu = patched
sys.exit(mod.main(["--shapes", "8192x28672,4096x14336", "--batches", "1,512", "--ratios", "0.25,r_hide",
                   "--skip-congestion", "--host-ctas", "16", "--host-window", "16384", "--out", out]))
