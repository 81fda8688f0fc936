"""Evidence for docs/probe.md: is a probe figure's gap to the paper the method or the chip?

Runs the cluster barrier through cooperative_groups and through smemkit's PTX, and the local
read rate with a volatile C++ shared pointer, next to `smemkit probe`'s own numbers. Median of
15 launches each, 2 CTAs of 256 threads on different SMs (P = 2). Writes JSON to argv[1].
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

from smemkit.hw.environment import device_block, provenance
from smemkit.hw.probe import spread_smem_bytes
from smemkit.runtime.device import gpu_info
from smemkit.runtime.launch import KernelModule

SOURCE = (Path(__file__).parent / "kernels" / "probe_methodology.cu").read_text()
TRIALS, REPS, ITERS = 15, 1000, 4096


def main() -> None:
    info = gpu_info(torch.cuda.current_device())
    smem = spread_smem_bytes(info.smem_per_sm, info.smem_per_block_optin)
    module = KernelModule(SOURCE, "probe_methodology")
    barrier = module.function("barrier_variants", ("ptr", "i32", "i32"))
    reader = module.function("local_read_volatile", ("ptr", "i32"))
    out = torch.zeros(4, dtype=torch.int64, device="cuda")
    device = device_block()
    result: dict = {"provenance": provenance(device), "device": device, "trials": TRIALS}
    for mode, label in ((0, "barrier_cycles_cooperative_groups"), (1, "barrier_cycles_smemkit_ptx")):
        samples = []
        for _ in range(TRIALS):
            barrier.launch(2, 256, out, REPS, mode, cluster=2, smem=smem)
            torch.cuda.synchronize()
            samples.append(out[0].item() / REPS)
        result[label] = statistics.median(samples)
    samples = []
    for _ in range(TRIALS):
        reader.launch(2, 256, out, ITERS, cluster=2, smem=smem)
        torch.cuda.synchronize()
        samples.append(256 * ITERS * 4 / out[0].item())
    result["local_read_bpc_volatile_cpp"] = statistics.median(samples)
    print(json.dumps({k: v for k, v in result.items() if k not in ("provenance", "device")}, indent=1))
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
