"""The new timing test's measurement with the reset switched off (should fall below 0.95) and on."""
import sys
sys.path.insert(0, "tests/gpu")
import smemkit.runtime.timing as timing
import test_runtime_gpu as t

t.read_after("read_plain")
for label in ("reset", "no reset", "reset"):
    saved = timing._reset_persisting_l2
    if label == "no reset":
        timing._reset_persisting_l2 = lambda: None
    plain = t.read_after("read_plain"); keep = t.read_after("read_keep")
    timing._reset_persisting_l2 = saved
    print(f"{label:9s} plain {plain*1e3:6.2f} us  after keep {keep*1e3:6.2f} us  ratio {keep/plain:.3f}", flush=True)
