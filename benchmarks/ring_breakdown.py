"""Where the ring path's time goes at batch 512 (issue 5's large-batch miss), part by part.

    python benchmarks/ring_breakdown.py --out benchmarks/results/h200/ring_breakdown.json

Per weight shape and offload ratio (r_hide = 0.036 and 0.05 of the offload_ops run): the whole
ring call (``split_linear(path="ring")``), the all-HBM cuBLAS GEMM, the GEMM of the HBM rows, one
host-chunk GEMM of the size ``ring_gemm.host_chunks`` picks, and the host-to-HBM copy of one
chunk alone and under a concurrent all-HBM GEMM. CUDA events, median of 20 after warm-up; no L2 flush.
Each part is timed alone (inside the ring call the HBM GEMM and the chunk GEMMs overlap on two
streams), and the chunk GEMM writes a contiguous output where the ring writes a column slice of
the full output (the same product, possibly another cuBLAS kernel).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from smemkit.hw.environment import device_block, provenance
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight
from smemkit.offload.ring_gemm import host_chunks
from smemkit.runtime.timing import time_gpu

SHAPES = ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192))
RATIOS = (0.036, 0.05)
BATCH = 512


def median_ms(fn) -> float:
    return time_gpu(fn, warmup=3, reps=20, reset_persisting_l2=False).median_ms  # as offload_ops.timed


def copy_under_gemm_ms(dst: torch.Tensor, src: torch.Tensor, gemm) -> float:
    """The chunk copy's own duration (events on its stream) while ``gemm`` runs on another."""
    side = torch.cuda.Stream()
    times = []
    for _ in range(10):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gemm()
        with torch.cuda.stream(side):
            start.record()
            dst.copy_(src, non_blocking=True)
            end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def breakdown(n: int, k: int, ratio: float) -> dict:
    torch.manual_seed(0)
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda") / k ** 0.5
    x = torch.randn(BATCH, k, dtype=torch.bfloat16, device="cuda")
    sw = SplitWeight(w, ratio)
    chunks, chunk = host_chunks(sw.host_rows, k, 2)
    rows = w[:chunk]
    slot = torch.empty(chunk, k, dtype=torch.bfloat16, device="cuda")
    rec = {"shape": [n, k], "ratio": ratio, "host_rows": sw.host_rows, "chunks": chunks,
           "chunk_rows": chunk,
           "ring_ms": median_ms(lambda: split_linear(x, sw, path="ring")),
           "cublas_all_ms": median_ms(lambda: F.linear(x, w)),
           "hbm_rows_gemm_ms": median_ms(lambda: F.linear(x, w[:sw.n_hbm])),
           "host_chunk_gemm_ms": median_ms(lambda: F.linear(x, rows)),
           "chunk_copy_ms": median_ms(lambda: slot.copy_(sw.host[:chunk], non_blocking=True)),
           "chunk_copy_under_gemm_ms": copy_under_gemm_ms(slot, sw.host[:chunk], lambda: F.linear(x, w))}
    return rec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    records = []
    for n, k in SHAPES:
        for ratio in RATIOS:
            records.append(breakdown(n, k, ratio))
            r = records[-1]
            print(f"{n:6d}x{k:<6d} r={ratio:.3f} chunks {r['chunks']} of {r['chunk_rows']:5d} rows | ring "
                  f"{r['ring_ms']:.3f} cublas {r['cublas_all_ms']:.3f} hbm-rows {r['hbm_rows_gemm_ms']:.3f} "
                  f"host-chunk {r['host_chunk_gemm_ms']:.3f} copy {r['chunk_copy_ms']:.3f} "
                  f"copy|gemm {r['chunk_copy_under_gemm_ms']:.3f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    device = device_block()
    args.out.write_text(json.dumps({"provenance": provenance(device), "device": device, "batch": BATCH,
                                    "records": records}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
