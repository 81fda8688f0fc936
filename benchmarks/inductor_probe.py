"""torch.compile's generated kernels against smemkit's at the points where compile is faster.

    TORCH_LOGS=output_code TORCHINDUCTOR_CACHE_DIR=DIR python benchmarks/inductor_probe.py OUT_DIR

Times torch.compile (default) next to smemkit's best non-cluster kernels (and, at lars
4096 x 16384, the cluster kernel at P = 4) at lars 4096 x 16384 and 4096 x 4096 and layernorm_bwd
2048 x 4096 (CUDA-graph replays, L2 flushed, median of 30) and
writes OUT_DIR/inductor_times.json; with the environment above, Inductor's Triton source lands in
DIR to be read. On the H200 (benchmarks/results/h200/inductor_times.json) torch.compile took
0.318 ms at lars 4096 x 16384, against 0.334 for reread_l2 and 0.325 for the cluster kernel.
"""

import json
import sys
from pathlib import Path

import torch

from smemkit.hw.environment import device_block, provenance
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

POINTS = (("lars", 4096, 16384, ("reread_l2", "cluster")),
          ("layernorm_bwd", 2048, 4096, ("staged", "regs_t256")),
          ("lars", 4096, 4096, ("staged", "regs_t256")))


def timed(fn) -> float:
    return time_gpu(fn, warmup=3, reps=30, graph=True, flush_l2=True).median_ms


def main(out: Path) -> None:
    results = {}
    for name, M, N, ours in POINTS:
        tensors, scalars = example_inputs(name, M, N, device="cuda")
        compiled = torch.compile(EAGER[name], dynamic=False)
        record = {"compile_ms": timed(lambda f=compiled, t=tensors, s=scalars: f(t, s))}
        for v in ours:
            kw = {"variant": v, "cluster_size": 4} if v == "cluster" else {"variant": v}
            spec = BUILTIN[name]
            record[f"{v}_ms"] = timed(lambda spec=spec, t=tensors, s=scalars, kw=kw: run(spec, t, s, **kw))
        results[f"{name}_{M}x{N}"] = record
        print(name, M, N, record, flush=True)
    device = device_block()
    doc = {"provenance": provenance(device), "device": device, "points": results}
    (out / "inductor_times.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
