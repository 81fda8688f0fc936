"""Large-batch split linear: tensor-core GEMMs with the host rows brought in by the copy engine
through an HBM ring, each chunk multiplied on a side stream as soon as it lands.

Past 64 input rows the decode kernel (``split_gemv.cu``) would read the whole weight again per 64
rows; a batch of hundreds of tokens is compute-bound instead, and the host rows only need to
arrive before the tensor cores want them. :func:`ring_linear` multiplies the input by all HBM
rows in one cuBLAS call on the caller's stream while, on two side streams, the copy engine lands
the host rows chunk by chunk in the ring (a ``cudaMemcpyAsync`` from the pinned rows, no SM
involved) and each landed chunk is multiplied by its own GEMM. The caller's stream waits for the
last chunk's GEMM only. So with C/F >= r W / B_h (r at or below the hide threshold
C/F x B_h / W) the copies hide under the HBM rows' GEMM, and what is left is the GEMMs of the
chunks still unmultiplied when it ends, the last one after its copy (the design before cut the
HBM rows into pieces, each waiting for its copy: geomean 1.206x the ideal over 80 points against
1.184x, ``benchmarks/results/h200/ring_side/``).

That tail is why the chunks shrink toward the end and are multiplied by :mod:`.chunk_gemm`:
- chunk sizes double from ``CHUNK_MIN_BYTES`` (the last chunk) up to ``CHUNK_MAX_BYTES``
  (:func:`host_chunks`), so the chunk that lands last is small;
- a chunk's rows give its output few tiles, so cuBLAS ran each over the whole K (26-43 us per
  chunk whatever its rows, ``ring_side/``); the split-K kernel spreads a chunk over all SMs.
The sixteenth session measured this against the two-slot ring of equal 8 MB chunks with cuBLAS
chunk GEMMs (``benchmarks/results/h200/run_2026-11-30_sixteenth/``).

The ring is ``RING_BYTES`` of HBM per (GPU, dtype, calling stream) however large the host part:
offloading still saves the host rows' HBM. Chunks are laid out one after another, wrapping to the
start when the next does not fit (:func:`ring_layout`); a chunk's copy waits for the GEMM of the
latest earlier chunk whose bytes it overwrites (the GEMM stream runs them in order, so that
covers every earlier one). The GEMM stream also gets its own cuBLAS workspace from torch (one per
cuBLAS handle and stream: 32 MiB on sm_90 by default; only used when a chunk falls back to
cuBLAS) and the ring its own split-K scratch, allocated at first use and not released by
:func:`free_rings`. One ring per calling stream, because the ring is only ordered against that
call's streams (calls on two streams would otherwise overwrite each other's chunks); a lock keeps
two threads on one stream from interleaving their enqueues. Every GEMM writes its own output
columns (strided views of the row-major output), the chunk GEMMs sum their split-K partials in a
fixed order, and each GEMM's shape is fixed by the split, so the result is the same bitwise from
run to run. Stream order is expressed with events recorded and waited within the call, so the
whole call can be captured in a CUDA graph (warm it up once outside the capture, as torch asks, so
the workspaces above exist). torch's capture stream gets its own ring, allocated at the first
capture; since ``torch.cuda.graph`` captures every graph on one default stream, all graphs
captured that way share that ring: replay them one at a time (or on one stream), not
concurrently on different streams. The side streams come from torch's stream pool (32 per device
and priority, handed out in turn), so with many rings two may share a stream: still correct
(every wait is on an event), but their work then queues instead of overlapping.

This is not DAK's direct-access GEMM (host tiles read by the GEMM kernel itself, e.g. by TMA): that
kernel is not built (docs/offload.md).
"""

from __future__ import annotations

import threading

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload import chunk_gemm
from smemkit.offload.pinned import TILE_ROWS, SplitWeight
from smemkit.offload.scratch import SplitScratch

RING_BYTES = 16 << 20
# Host bytes per chunk: at most half the ring (two copies in flight), at least CHUNK_MIN_BYTES for
# the last one (about 9 us of copy at 55 GB/s, short enough that its GEMM is a small tail).
CHUNK_MAX_BYTES = RING_BYTES // 2
CHUNK_MIN_BYTES = 512 << 10


class HostRing:
    """``RING_BYTES`` of HBM, the side streams for the copies and the host chunks' GEMMs, the
    events that order them, the chunk GEMMs' split-K scratch, and the lock that keeps one call's
    enqueues together."""

    def __init__(self, device: torch.device, dtype: torch.dtype) -> None:
        self.buffer = torch.empty(RING_BYTES // torch.empty((), dtype=dtype).element_size(), dtype=dtype,
                                  device=device)
        self.copies = torch.cuda.Stream(device=device)
        self.gemms = torch.cuda.Stream(device=device)
        self.ready = torch.cuda.Event()  # the latest copy landed (waited right after its record)
        self.done: list[torch.cuda.Event] = []  # chunk j's GEMM done reading its rows
        self.scratch = SplitScratch(device.index)
        self.lock = threading.Lock()

    def rows(self, offset: int, rows: int, k: int) -> torch.Tensor:
        """The ring's ``rows`` x ``k`` view starting ``offset`` elements in."""
        return self.buffer[offset: offset + rows * k].view(rows, k)

    def done_events(self, chunks: int) -> list[torch.cuda.Event]:
        while len(self.done) < chunks:
            self.done.append(torch.cuda.Event())
        return self.done


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


def ring_fits(k: int, elem_bytes: int) -> bool:
    """Whether one chunk may hold a 16-row tile of the weight (K up to 262,144 at 2 bytes)."""
    return TILE_ROWS * k * elem_bytes <= CHUNK_MAX_BYTES


def host_chunks(host_rows: int, k: int, elem_bytes: int) -> list[int]:
    """Rows of each host chunk, in copy order: doubling toward the front from the last chunk's
    ``CHUNK_MIN_BYTES`` (at least one 16-row tile) up to ``CHUNK_MAX_BYTES``, all on 16-row
    boundaries except the last, which takes the rows short of a tile. So every GEMM's output
    columns start 32-byte aligned (odd offsets sent cuBLAS to slow kernels: 2.5x at 28672 x 8192,
    batch 512, r = 0.05), and the chunk whose copy ends last is the smallest."""
    if host_rows == 0:
        return []
    if not ring_fits(k, elem_bytes):
        raise InvalidArgumentError(f"the ring path needs 16 weight rows per {CHUNK_MAX_BYTES} B chunk; "
                                   f"K = {k} is too wide (use path='kernel')")
    row_bytes = k * elem_bytes
    most = CHUNK_MAX_BYTES // row_bytes // TILE_ROWS * TILE_ROWS
    size = min(most, max(TILE_ROWS, CHUNK_MIN_BYTES // row_bytes // TILE_ROWS * TILE_ROWS))
    left = _tiles(host_rows)
    sizes: list[int] = []
    while left:
        sizes.append(min(size, left))
        left -= sizes[-1]
        size = min(2 * size, most)
    sizes.reverse()
    sizes[-1] -= _tiles(host_rows) - host_rows
    return sizes


def ring_layout(chunk_elems: list[int], ring_elems: int) -> list[tuple[int, int]]:
    """(offset, wait) of each chunk in a ring of ``ring_elems``: chunks follow one another and
    wrap to the start when the next does not fit; ``wait`` is the latest earlier chunk whose
    elements it overwrites (-1: none), whose GEMM its copy must wait for."""
    placed: list[tuple[int, int]] = []
    end = 0
    for j, size in enumerate(chunk_elems):
        if size > ring_elems:
            raise InvalidArgumentError(f"a chunk of {size} elements does not fit a ring of {ring_elems}")
        offset = end if end + size <= ring_elems else 0
        starts = [o for o, _ in placed]
        wait = max((i for i in range(j) if starts[i] < offset + size and offset < starts[i] + chunk_elems[i]),
                   default=-1)
        placed.append((offset, wait))
        end = offset + size
    return placed


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
    sizes = host_chunks(host_rows, k, x2.element_size())
    ring = host_ring(x2.device, x2.dtype, main)
    layout = ring_layout([rows * k for rows in sizes], ring.buffer.numel())
    with ring.lock:
        done = ring.done_events(len(sizes))
        # both side streams start after the caller's earlier work (this stream's previous calls
        # are then done with the ring)
        ring.copies.wait_stream(main)
        ring.gemms.wait_stream(main)
        try:
            h0 = 0
            for j, (rows, (offset, wait)) in enumerate(zip(sizes, layout, strict=True)):
                h1 = h0 + rows
                chunk = ring.rows(offset, rows, k)
                with torch.cuda.stream(ring.copies):
                    if wait >= 0:
                        ring.copies.wait_event(done[wait])  # that chunk's GEMM is enqueued already
                    chunk.copy_(weight.host[h0:h1], non_blocking=True)
                    ring.ready.record(ring.copies)
                if j == 0 and n_hbm:  # the HBM rows, enqueued once the first copy is
                    _gemm(x2, weight.hbm, bias, y2, 0, n_hbm)
                with torch.cuda.stream(ring.gemms):
                    ring.gemms.wait_event(ring.ready)
                    _chunk_gemm(x2, chunk, bias, y2, n_hbm + h0, n_hbm + h1, ring)
                    done[j].record(ring.gemms)
                h0 = h1
        finally:
            # rejoin both side streams, also when an enqueue raised: a capture must end joined, and
            # the next call's copies must not overwrite rows an orphaned GEMM still reads
            main.wait_stream(ring.copies)
            main.wait_stream(ring.gemms)


def _chunk_gemm(x2: torch.Tensor, rows: torch.Tensor, bias: torch.Tensor | None, y2: torch.Tensor,
                c0: int, c1: int, ring: HostRing) -> None:
    """Output columns [c0, c1) of a host chunk: the split-K kernel where it takes the operands,
    else cuBLAS."""
    out = y2[:, c0:c1]
    b = None if bias is None else bias[c0:c1]
    if chunk_gemm.eligible(x2, rows, out):
        chunk_gemm.chunk_linear(x2, rows, b, out, ring.scratch)
    else:
        linear_into(x2, rows, b, out)


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
