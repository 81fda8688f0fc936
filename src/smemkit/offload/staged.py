"""The staged path of ``split_linear``: the host rows landed in HBM by the copy engine, chunk by
chunk, while the split kernel already runs.

The split kernel's host CTAs read pinned memory over PCIe at about 51.4 GB/s at best, 93 % of
the copy engine's 55.5 GB/s (``benchmarks/results/h200/host_paths/``: every SM-side method, loads,
bulk copies and TMA, stops there), and a few MB of host rows read in place took 135-139 us where
the copy engine needs 109 (``run_2026-11-30_seventeenth/c5``). Here the copy engine
(``cudaMemcpyAsync`` on the ring's copy stream, no SM involved) lands the host rows in the calling
stream's :class:`~smemkit.offload.ring_gemm.HostRing` buffer in chunks of whole 16-row tiles, and
after each chunk copies a 1 from pinned memory into that chunk's flag (the same stream, so the
flag lands after the chunk). The split kernel, launched at the same time on the caller's stream,
reads the HBM rows as always and the host rows from that buffer, each host tile once its chunk's
flag is set (``split_gemv.cu``, ``wait_flag``). The flags are zeroed on the caller's stream
before the copies are allowed to start, so a replayed graph never sees the previous call's flags.

The kernel's host CTAs spin on flags that only the copy engine sets, which needs no SM, so the
kernel cannot starve the copies; the copies are enqueued before the kernel, and in a CUDA graph
the two are parallel branches. The whole host part must fit the ring (``staged_fits``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import TILE_ROWS, SplitWeight
from smemkit.offload.ring_gemm import RING_SLOT_BYTES, RING_SLOTS, STAGED_MAX_CHUNKS, host_ring

# Host bytes per chunk: the kernel can start on a chunk only once it has landed, and the last
# chunk's tiles are read and multiplied after the whole copy, so chunks should be small; each
# chunk costs a second copy (its flag).
STAGED_CHUNK_BYTES = 1 << 20


def staged_fits(host_rows: int, k: int, elem_bytes: int) -> bool:
    """Whether the host rows fit the ring's buffer (both slots)."""
    return host_rows * k * elem_bytes <= RING_SLOTS * RING_SLOT_BYTES


def staged_chunks(host_rows: int, k: int, elem_bytes: int, chunks: int | None = None) -> tuple[int, int]:
    """(chunks, 16-row tiles per chunk) for ``host_rows`` rows: about STAGED_CHUNK_BYTES each (or
    ``chunks``), at most STAGED_MAX_CHUNKS and one tile each, equal but the last."""
    tiles = math.ceil(host_rows / TILE_ROWS)
    if tiles == 0:
        return 0, 1
    if chunks is None:
        chunks = round(host_rows * k * elem_bytes / STAGED_CHUNK_BYTES)
    chunks = max(1, min(chunks, STAGED_MAX_CHUNKS, tiles))
    per_chunk = math.ceil(tiles / chunks)
    return math.ceil(tiles / per_chunk), per_chunk


@contextmanager
def landed_host_rows(weight: SplitWeight, chunks: int | None = None
                     ) -> Iterator[tuple[torch.Tensor, torch.Tensor, int]]:
    """Enqueue the copies of ``weight``'s host rows into the current stream's ring buffer and
    yield (that buffer as a host_rows x K matrix, the chunk flags, tiles per chunk) for a kernel
    launched inside the block on the current stream; the stream then waits for the copies."""
    k = weight.shape[1]
    elem = weight.dtype.itemsize
    if not staged_fits(weight.host_rows, k, elem):
        raise InvalidArgumentError(
            f"path='staged' lands the host rows in {RING_SLOTS} x {RING_SLOT_BYTES} B of HBM; "
            f"{weight.host_rows} rows of K = {k} do not fit (use path='kernel' or 'ring')")
    main = torch.cuda.current_stream(weight.device)
    ring = host_ring(weight.device, weight.dtype, main)
    n_chunks, per_chunk = staged_chunks(weight.host_rows, k, elem, chunks)
    staging = ring.buffer[: weight.host_rows * k].view(weight.host_rows, k)
    flags = ring.flags[:n_chunks]
    with ring.lock:
        flags.zero_()  # on the caller's stream, before the copies may start
        ring.copies.wait_stream(main)
        try:
            with torch.cuda.stream(ring.copies):
                for j in range(n_chunks):
                    r0, r1 = j * per_chunk * TILE_ROWS, min(weight.host_rows, (j + 1) * per_chunk * TILE_ROWS)
                    staging[r0:r1].copy_(weight.host[r0:r1], non_blocking=True)
                    flags[j:j + 1].copy_(ring.one, non_blocking=True)
            yield staging, flags, per_chunk
        finally:
            main.wait_stream(ring.copies)
