"""Why is layernorm_bwd slower than softmax_bwd at the same 12 B/element? Isolate rows and gamma.

Times the cluster kernels (P = 8, 16) of layernorm_bwd at N = 64K for M = 2048 and 4096, and of
the same spec with gamma removed (g = dy), with the timing of benchmarks/reduction.py.

    python benchmarks/diag_layernorm.py [OUT.json]   # -> benchmarks/results/h200/diag_layernorm.json
"""

from __future__ import annotations

import dataclasses
import json
import sys

import torch

from smemkit.hw.environment import device_block, provenance
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_gpu

LN = BUILTIN["layernorm_bwd"]
NO_GAMMA = dataclasses.replace(LN, name="layernorm_bwd_nogamma", columns=(),
                               lets=(("g", "dy"), *LN.lets[1:]))


def main() -> None:
    out = []
    N = 65536
    for M in (2048, 4096):
        tensors, scalars = example_inputs("layernorm_bwd", M, N, device="cuda")
        for spec in (LN, NO_GAMMA):
            t = {k: v for k, v in tensors.items() if k in (*spec.inputs, *spec.columns)}
            for P in (8, 16):
                timing = time_gpu(lambda s=spec, p=P, t=t, sc=scalars: run(s, t, sc, variant="cluster",
                                                                              cluster_size=p),
                                  warmup=5, reps=20, graph=True, flush_l2=True)
                tbps = 12 * M * N / (timing.median_ms * 1e-3) / 1e12
                out.append({"spec": spec.name, "M": M, "N": N, "P": P, "ms": timing.median_ms,
                            "eff_tbps": tbps})
                print(f"{spec.name:24s} M={M} P={P:2d} {timing.median_ms:.3f} ms {tbps:.2f} TB/s")
    if len(sys.argv) > 1:
        device = device_block()
        with open(sys.argv[1], "w") as f:
            json.dump({"provenance": provenance(device), "device": device, "records": out}, f, indent=1)


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    main()
