"""Large-batch split linear: tensor-core GEMMs (cuBLAS) with the host rows brought in by the copy
engine through a two-slot HBM ring, each chunk multiplied on a side stream once it has landed.

Past 64 input rows the decode kernel (``split_gemv.cu``) would read the whole weight again per 64
rows; a batch of hundreds of tokens is compute-bound instead, and the host rows only need to
arrive before the tensor cores want them. :func:`ring_linear` multiplies the input by all HBM
rows in one cuBLAS call on the caller's stream while, on two side streams, the copy engine lands
the host rows chunk by chunk in ring slot j mod 2 (a ``cudaMemcpyAsync`` from the pinned rows, no
SM involved) and each landed chunk is multiplied by its own GEMM. The caller's stream waits for
the last chunk's GEMM only. So with C/F >= r W / B_h (r at or below the
hide threshold C/F x B_h / W) the copies hide under the HBM rows' GEMM, and what is left are the
chunks' GEMMs, not a chain of GEMM pieces each waiting for its copy (such a chain measured
geomean 1.206x the ideal over 80 points against this design's 1.184x; commit 5419159).
A chunk's GEMM finishes only around the end of the HBM rows' GEMM, whenever its copy landed, and
is skinny: 7.5-15 us at batch 512 (16-720 rows) in a globaltimer timeline of the ring
(commit 2e75e66). That sets the large-batch tail. Measured and not adopted: a K-split batched
GEMM of fp32 partials (commit 5419159); an mma.sync split-K kernel for the chunks, chunks
shrinking toward the end, and an SM carveout for the HBM GEMM (commit 2e75e66).

The ring holds 2 x ``RING_SLOT_BYTES`` of HBM per (GPU, dtype, calling stream) however large the
host part: offloading still saves the host rows' HBM. Its GEMM stream also gets its own cuBLAS
workspace from torch (one per cuBLAS handle and stream: 32 MiB on sm_90 by default), allocated at
its first chunk GEMM and not released by :func:`free_rings`. One ring per calling stream, because
the slots are only ordered against that call's streams (calls on two streams would otherwise
overwrite each other's slots); a lock keeps two threads on one stream from interleaving their
enqueues. Every GEMM writes its own output columns (strided views of the row-major output;
cuBLAS takes them without a copy), the chunk GEMMs on their own stream have their own cuBLAS
workspace, and each GEMM's shape is fixed by the split, so the result is the same bitwise from run
to run. Stream order is expressed with events recorded and waited within the call, so the whole
call can be captured in a CUDA graph (warm it up once outside the capture, as torch asks, so the
workspace above exists). torch's capture stream gets its own ring, allocated at the first
capture; since ``torch.cuda.graph`` captures every graph on one default stream, all graphs
captured that way share that ring: replay them one at a time (or on one stream), not
concurrently on different streams. The side streams come from torch's stream pool (32 per device
and priority, handed out in turn), so with many rings two may share a stream: still correct
(every wait is on an event), but their work then queues instead of overlapping.

Chunk j + 2 is copied only after chunk j's GEMM, which finishes only around the end of the HBM
rows' GEMM on the caller's stream (commit 2e75e66): with 8 MB slots a 23.6 MB host part (the
470 MB layers at r = 0.05) in three chunks stalled its third copy until then, hence 16 MB slots
(``RING_SLOT_BYTES``). The attention variant of this ring, whose HBM work is a long SDPA, stalled
the same way (commit c6e8bdf).

DAK's direct-access GEMM (host tiles read by a kernel itself, by TMA, multicast across a cluster)
is :mod:`.direct_gemm`; beside cuBLAS it was slower than this ring at every measured batch-512 point
(docs/offload.md), so the rule keeps the ring.
"""

from __future__ import annotations

import math
import threading

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import SplitWeight
from smemkit.offload.split_rule import RING_SLOT_BYTES, TILE_ROWS, ring_fits

RING_SLOTS = 2


class HostRing:
    """Two HBM slots of ``RING_SLOT_BYTES``, the side streams for the copies and the host chunks'
    GEMMs, the events that order them, and the lock that keeps one call's enqueues together."""

    def __init__(self, device: torch.device, dtype: torch.dtype) -> None:
        elems = RING_SLOT_BYTES // torch.empty((), dtype=dtype).element_size()
        self.slots = [torch.empty(elems, dtype=dtype, device=device) for _ in range(RING_SLOTS)]
        self.copies = torch.cuda.Stream(device=device)
        self.gemms = torch.cuda.Stream(device=device)
        self.ready = [torch.cuda.Event() for _ in range(RING_SLOTS)]  # copy landed
        self.free = [torch.cuda.Event() for _ in range(RING_SLOTS)]  # GEMM done reading
        self.lock = threading.Lock()

    def slot(self, index: int, rows: int, k: int) -> torch.Tensor:
        return self.slots[index][: rows * k].view(rows, k)


_RINGS: dict[tuple[int, torch.dtype, int], HostRing] = {}
_LOCK = threading.Lock()


def host_ring(device: torch.device, dtype: torch.dtype, stream: torch.cuda.Stream | None = None) -> HostRing:
    """The ring of this GPU, dtype and calling stream (default: the current one), allocated on
    first use."""
    stream = stream if stream is not None else torch.cuda.current_stream(device)
    key = (device.index, dtype, stream.cuda_stream)
    with _LOCK:
        if key not in _RINGS:
            _RINGS[key] = HostRing(device, dtype)
        return _RINGS[key]


def free_rings() -> int:
    """Drop every ring (after synchronizing the devices they live on); returns how many. Its
    memory goes back to torch once no call still holds it (one running on another thread keeps
    its ring until it returns); the next ring-path call allocates again (inside a capture: from
    that graph's pool). Not while a CUDA graph that ran the ring path may still be replayed: like
    any buffer a graph captured, its slots must outlive it."""
    with _LOCK:
        for device in {key[0] for key in _RINGS}:
            torch.cuda.synchronize(device)
        count = len(_RINGS)
        _RINGS.clear()
    return count



def host_chunks(host_rows: int, k: int, elem_bytes: int) -> tuple[int, int]:
    """(chunks, rows per chunk) of the host rows: as few chunks of at most one ring slot as hold
    them, of equal rows rounded up to the split's 16-row tile (the last one takes the rest, so it
    may be shorter), so every GEMM's output columns start 32-byte aligned (odd offsets send
    cuBLAS to slow kernels: 2.5x the time at 28672 x 8192, batch 512, r = 0.05, unrounded;
    commit 9d96730)."""
    if host_rows == 0:
        return 0, 0
    if not ring_fits(k, elem_bytes):
        raise InvalidArgumentError(f"the ring path needs 16 weight rows per {RING_SLOT_BYTES} B slot; "
                                   f"K = {k} is too wide (use path='kernel')")
    slot_rows = RING_SLOT_BYTES // (k * elem_bytes) // TILE_ROWS * TILE_ROWS
    chunks = math.ceil(host_rows / slot_rows)
    return chunks, _tiles(math.ceil(host_rows / chunks))  # <= slot_rows, a multiple of the tile


def _tiles(rows: int) -> int:
    """``rows`` rounded up to a multiple of TILE_ROWS."""
    return -(-rows // TILE_ROWS) * TILE_ROWS


def ring_linear(x2: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None, y2: torch.Tensor) -> None:
    """``y2 = x2 @ W.T (+ bias)`` for a 2-D input, W split between HBM and host (module docstring).
    Arguments are already checked by ``split_linear``."""
    n_hbm, host_rows = weight.n_hbm, weight.host_rows
    main = torch.cuda.current_stream(x2.device)
    if not host_rows:
        _gemm(x2, weight.hbm, bias, y2, 0, n_hbm)
        return
    k = x2.shape[1]
    chunks, chunk = host_chunks(host_rows, k, x2.element_size())
    ring = host_ring(x2.device, x2.dtype, main)
    with ring.lock:
        # both side streams start after the caller's earlier work (this stream's previous calls
        # are then done with the slots)
        ring.copies.wait_stream(main)
        ring.gemms.wait_stream(main)
        try:
            for j in range(chunks):
                h0, h1 = j * chunk, min(host_rows, (j + 1) * chunk)
                slot = j % RING_SLOTS
                with torch.cuda.stream(ring.copies):
                    if j >= RING_SLOTS:
                        ring.copies.wait_event(ring.free[slot])  # chunk j - 2's GEMM is enqueued already
                    ring.slot(slot, h1 - h0, k).copy_(weight.host[h0:h1], non_blocking=True)
                    ring.ready[slot].record(ring.copies)
                if j == 0 and n_hbm:  # the HBM rows, enqueued once the first copy is
                    _gemm(x2, weight.hbm, bias, y2, 0, n_hbm)
                with torch.cuda.stream(ring.gemms):
                    ring.gemms.wait_event(ring.ready[slot])
                    _gemm(x2, ring.slot(slot, h1 - h0, k), bias, y2, n_hbm + h0, n_hbm + h1)
                    ring.free[slot].record(ring.gemms)
        finally:
            # rejoin both side streams, also when an enqueue raised: a capture must end joined, and
            # the next call's copies must not overwrite slots an orphaned GEMM still reads
            main.wait_stream(ring.copies)
            main.wait_stream(ring.gemms)


def _gemm(x2: torch.Tensor, rows: torch.Tensor, bias: torch.Tensor | None, y2: torch.Tensor,
          c0: int, c1: int) -> None:
    """Output columns [c0, c1) = x2 @ rows.T (+ bias[c0:c1]), written in place."""
    linear_into(x2, rows, None if bias is None else bias[c0:c1], y2[:, c0:c1])


def linear_into(x2: torch.Tensor, rows: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor) -> None:
    """``out = x2 @ rows.T (+ bias)`` in cuBLAS, written in place (``out`` may be a column slice of
    a row-major matrix: cuBLAS takes its leading dimension, no copy). The same addmm / mm that
    ``F.linear`` runs for 2-D inputs."""
    if bias is None:
        torch.mm(x2, rows.t(), out=out)
    else:
        torch.addmm(bias, x2, rows.t(), out=out)
