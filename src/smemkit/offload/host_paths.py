"""Which instruction should read host tiles: the SMs' asynchronous copy engine (``cp.async.bulk``,
TMA tensor copies, TMA multicast across a cluster) against 16-byte loads (issue 5's "choose by
measurement and record the comparison").

The split GEMV's own ``host_stage=3`` measured bulk copies of one row's 64-256 B each (16-22 GB/s
against 51 GB/s for loads on the H200, commit 0d2a6a5); that left open whether larger
copies, or 2-D tensor copies of the tiles a GEMM wants, reach the link. ``host_paths.cu`` answers
it without a GEMM around it: each of H CTAs keeps ``stages`` copies of ``chunk`` / tile bytes in
flight into a shared-memory ring, XORs every word that lands (checked on the host against the
source; an XOR catches wrong, missing or stale bytes, not a reordering or a pair of duplicates),
and refills the slot. The rate is bytes over the span of the CTAs' ``%globaltimer`` stamps, as in
the congestion probe, whose host role (``ld.global.cs``) is the load reference.

With multicast (clusters of P CTAs), each rank copies 1/P of every tile to all P CTAs: the link
carries each byte once and ``delivered_gbps`` = P x ``link_gbps``; a large-batch GEMM whose P
CTAs share a host weight tile would read it once this way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from smemkit.errors import InvalidArgumentError, check_positive_int, is_int
from smemkit.offload.congestion import bytes_and_span
from smemkit.runtime.tma import encode_2d, to_device

SOURCE = "offload/host_paths.cu"
THREADS = 128
MAX_STAGES = 8
MAX_CTAS = 1024  # rows of the stats buffer
ALIGN_SLACK = 1024  # the kernels round their ring up to 1024 bytes (128-byte swizzled boxes)
BULK_PARAMS = ("ptr", "u64", "u32", "i32", "ptr")
TMA_PARAMS = ("ptr", "i32", "i32", "i32", "i32", "i32", "ptr")
TMA_COLS = 4096  # columns (bf16) of the matrix the TMA probe views the host buffer as


@dataclass(frozen=True)
class PathPoint:
    """One measurement: ``method`` (bulk, tma, tma_multicast), H CTAs, bytes per copy (a bulk
    chunk or a whole tile), ring depth, cluster size P, the link rate and the rate at which bytes
    landed in shared memory (P x link under multicast), and whether the data checked out."""

    method: str
    ctas: int
    copy_bytes: int
    stages: int
    P: int
    link_gbps: float
    delivered_gbps: float
    data_ok: bool

    @property
    def in_flight_bytes_per_cta(self) -> int:
        return self.stages * self.copy_bytes

    def as_dict(self) -> dict:
        d = asdict(self)
        d["in_flight_bytes_per_cta"] = self.in_flight_bytes_per_cta
        return d


def check_ring(copy_bytes: int, stages: int, smem_limit: int, what: str) -> int:
    """Dynamic shared memory of a ring of ``stages`` slots of ``copy_bytes`` (with the alignment
    slack), or a clear error naming what is allowed."""
    if not is_int(stages) or not 1 <= stages <= MAX_STAGES:
        raise InvalidArgumentError(f"stages must be an integer in 1..{MAX_STAGES}, got {stages!r}")
    if not is_int(copy_bytes) or copy_bytes <= 0 or copy_bytes % 16:
        raise InvalidArgumentError(f"{what} must be a positive multiple of 16 bytes, got {copy_bytes!r}")
    smem = stages * copy_bytes + ALIGN_SLACK
    if smem > smem_limit:
        raise InvalidArgumentError(
            f"{stages} stages x {copy_bytes} B ({what}) need {smem} B of shared memory per CTA; "
            f"this GPU allows {smem_limit} B: fewer stages or smaller copies")
    return smem


def check_tile(tile_rows: int, tile_cols: int, P: int) -> int:
    """Rows each CTA's box covers (tile_rows / P) for a TMA tile, or a clear error: the box is at
    most 256 x 256 elements, its row a multiple of 16 bytes; a 128-byte-swizzled box (64 columns)
    covers a multiple of 8 rows, so every box starts 1024-byte aligned in shared memory."""
    if not is_int(P) or P not in (1, 2, 4):
        raise InvalidArgumentError(f"cluster size P must be 1, 2 or 4, got {P!r}")
    if not is_int(tile_rows) or tile_rows <= 0 or tile_rows % P:
        raise InvalidArgumentError(f"tile_rows must be a positive multiple of P = {P}, got {tile_rows!r}")
    box_rows = tile_rows // P
    if box_rows > 256:
        raise InvalidArgumentError(f"tile_rows / P = {box_rows}: a TMA box has at most 256 rows")
    if not is_int(tile_cols) or tile_cols not in (64, 128, 256):
        raise InvalidArgumentError(f"tile_cols must be 64 (128-byte swizzle), 128 or 256, got {tile_cols!r}")
    if tile_cols == 64 and box_rows % 8:
        raise InvalidArgumentError(f"tile_rows / P = {box_rows}: a 128-byte-swizzled box (tile_cols = 64) "
                                   "covers a multiple of 8 rows")
    return box_rows


def xor_words(data: np.ndarray) -> int:
    """XOR of the 32-bit words of a byte array (its length a multiple of 4)."""
    return int(np.bitwise_xor.reduce(data.view(np.uint32))) if data.size else 0


def link_rate(stats: np.ndarray, P: int = 1) -> tuple[float, float]:
    """(link GB/s, delivered GB/s) from per-CTA stats rows (start ns, end ns, bytes landed, xor):
    bytes over the span from the first start to the last end; the link carried 1/P of what
    landed."""
    landed, span = bytes_and_span(stats)
    if span <= 0:
        raise InvalidArgumentError("the probe's timer span is not positive")
    return landed / P / span, landed / span


class HostPathProbe:
    """Compiles ``host_paths.cu`` for the current GPU and owns ``host_mib`` of pinned host memory
    filled with a known pattern, which both probes read."""

    def __init__(self, host_mib: int = 256) -> None:
        from smemkit.offload.pinned import PinnedBuffer
        from smemkit.runtime.compiler import package_source
        from smemkit.runtime.device import require_gpu, require_sm90
        from smemkit.runtime.launch import KernelModule

        check_positive_int("host_mib", host_mib)
        self.device_index = require_gpu()
        info = require_sm90(self.device_index, "the host-path probe (bulk and tensor copies)")
        self.smem_limit = info.smem_per_block_optin - 256  # the kernels' static mbarriers
        module = KernelModule(package_source(SOURCE), "offload/host_paths")
        self.bulk_kernel = module.function("host_bulk_probe", BULK_PARAMS)
        self.tma_kernel = module.function("host_tma_probe", TMA_PARAMS)
        self.host = PinnedBuffer(host_mib << 20, device=self.device_index)
        words = self.host.tensor(torch.int32)
        words.copy_(torch.randint(-(2 ** 31), 2 ** 31 - 1, (words.numel(),), dtype=torch.int32,
                                  generator=torch.Generator().manual_seed(0)))
        self.bytes = self.host.tensor(torch.uint8).numpy()
        self._expected: dict[int, int] = {}  # XOR of the first n bytes (the buffer never changes)
        self.stats = torch.zeros(4 * MAX_CTAS, dtype=torch.int64, device=f"cuda:{self.device_index}")
        self.tmaps: dict[tuple[int, int], torch.Tensor] = {}

    def bulk(self, ctas: int, chunk: int, stages: int, nbytes: int | None = None) -> PathPoint:
        """H CTAs read the first ``nbytes`` (default: the whole buffer; whole chunks) by bulk
        copies of ``chunk`` bytes."""
        smem = check_ring(chunk, stages, self.smem_limit, "chunk")
        n_chunks = self._check_nbytes(nbytes, chunk, "one chunk") // chunk
        self._check_ctas(ctas, 1, n_chunks, "chunk")
        self.stats.zero_()
        self.bulk_kernel.launch(ctas, THREADS, self.host.device_ptr, n_chunks, chunk, stages,
                                self.stats, smem=smem)
        stats = self._stats(ctas)
        link, delivered = link_rate(stats)
        return PathPoint("bulk", ctas, chunk, stages, 1, link, delivered,
                         self._xor(stats) == self._expected_xor(n_chunks * chunk))

    def tma(self, ctas: int, tile_rows: int, stages: int, *, tile_cols: int = 64, P: int = 1,
            nbytes: int | None = None) -> PathPoint:
        """H CTAs (H / P clusters) read ``nbytes`` as tiles of tile_rows x tile_cols bf16 by tensor
        copies; with P > 1 each tile is multicast to the P CTAs of a cluster."""
        box_rows = check_tile(tile_rows, tile_cols, P)
        tile_bytes = tile_rows * tile_cols * 2
        smem = check_ring(tile_bytes, stages, self.smem_limit, "tile")
        band = tile_rows * TMA_COLS * 2  # one band of rows: the unit the tiles are counted in
        bands = self._check_nbytes(nbytes, band, "one band of tile_rows x 4096 columns") // band
        tiles_per_band = TMA_COLS // tile_cols
        n_tiles = bands * tiles_per_band
        self._check_ctas(ctas, P, n_tiles, "tile")
        tmap = self._tensor_map(box_rows, tile_cols)
        self.stats.zero_()
        self.tma_kernel.launch(ctas, THREADS, tmap, n_tiles, tiles_per_band, box_rows, tile_cols, stages,
                               self.stats, smem=smem, cluster=P)
        stats = self._stats(ctas)
        # every tile of a cluster lands in each of its P CTAs: the leaders (rank 0) together hold
        # every tile once, and each rank must hold what its leader holds
        by_cluster = stats[:, 3].reshape(-1, P)
        ok = (self._xor(stats[::P]) == self._expected_xor(bands * band)
              and bool((by_cluster == by_cluster[:, :1]).all()))
        link, delivered = link_rate(stats, P)
        return PathPoint("tma" if P == 1 else "tma_multicast", ctas, tile_bytes, stages, P, link,
                         delivered, ok)

    def _expected_xor(self, nbytes: int) -> int:
        """XOR of the buffer's first ``nbytes``, computed once per size (a host pass over it)."""
        if nbytes not in self._expected:
            self._expected[nbytes] = xor_words(self.bytes[:nbytes])
        return self._expected[nbytes]

    def free(self) -> None:
        self.host.free()

    def _check_nbytes(self, nbytes: int | None, unit: int, what: str) -> int:
        """The bytes to read (default: the whole buffer): at least ``unit`` (``what``) and at most
        the buffer."""
        nbytes = self.host.nbytes if nbytes is None else nbytes
        if not is_int(nbytes) or not unit <= nbytes <= self.host.nbytes:
            raise InvalidArgumentError(f"nbytes must be an integer from {unit} ({what}) to the buffer's "
                                       f"{self.host.nbytes}, got {nbytes!r}")
        return nbytes

    @staticmethod
    def _check_ctas(ctas: int, P: int, pieces: int, what: str) -> None:
        """At most MAX_CTAS CTAs (the stats buffer), a whole number of clusters, no cluster idle."""
        top = min(MAX_CTAS // P, pieces) * P
        if not is_int(ctas) or not P <= ctas <= top or ctas % P:
            raise InvalidArgumentError(
                f"ctas must be a multiple of the cluster size {P} from {P} to {top} (at most {MAX_CTAS} "
                f"CTAs and at most one cluster per {what}), got {ctas!r}")

    def _stats(self, ctas: int) -> np.ndarray:
        torch.cuda.synchronize(self.device_index)
        return self.stats.view(-1, 4)[:ctas].cpu().numpy().astype(np.uint64)

    @staticmethod
    def _xor(stats: np.ndarray) -> int:
        return int(np.bitwise_xor.reduce(stats[:, 3].astype(np.uint32))) if len(stats) else 0

    def _tensor_map(self, box_rows: int, tile_cols: int) -> torch.Tensor:
        """The tensor map (in device memory) viewing the pinned buffer as a row-major bf16 matrix of
        TMA_COLS columns, with a box of box_rows x tile_cols."""
        key = (box_rows, tile_cols)
        if key not in self.tmaps:
            rows = self.host.nbytes // (TMA_COLS * 2)
            raw = encode_2d(self.host.device_ptr, rows, TMA_COLS, box_rows, tile_cols, torch.bfloat16,
                            promote_l2=True)
            self.tmaps[key] = to_device(raw, f"cuda:{self.device_index}")
        return self.tmaps[key]
