"""The rewritten evict_last timing test's measurement (tests/gpu/test_runtime_gpu.keep_ratios) with
the persisting-L2 reset on (--reset 1) or monkeypatched away (--reset 0): the test must pass with it
and would fail without it."""
import argparse, sys

sys.path.insert(0, "tests/gpu")
import smemkit.runtime.timing as timing  # noqa: E402
import test_runtime_gpu as t  # noqa: E402

ap = argparse.ArgumentParser(); ap.add_argument("--reset", type=int); a = ap.parse_args()
if not a.reset:
    timing._reset_persisting_l2 = lambda: None
r = t.keep_ratios(5)
print(f"reset {a.reset} ratios {' '.join(f'{q:.3f}' for q in r)} median {r[2]:.3f} -> {'pass' if r[2] >= 0.95 else 'FAIL'}", flush=True)
