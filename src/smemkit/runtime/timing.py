"""Timing GPU work with CUDA events: warm-up first, one event pair per repetition, median.

The warm-up is counted in calls and then in time: after ``warmup`` calls (compilation,
autotuning, first-touch), the call (with its L2 flush) runs back to back until ``warm_ms``
(default 25 ms, as triton.testing.do_bench) have passed on the GPU, right before the timed loop.
After the GPU idles (a compilation, Python work between measurements) the first few milliseconds
of the same graph ran about 9 % slower than the rest on the H200, so a median over 20-30 short
repetitions straddled the two speeds (interleaved A/B sets of 20 graph replays, commit 3fdee49).
Every caller gets it, autotuning included (its first call at a shape takes about 25 ms more per
candidate): candidates timed cold would be ranked by when they ran, not by their speed.

Before the back-to-back calls, every L2 line kept with an ``evict_last`` (persisting) policy goes
back to normal priority (``cuCtxResetPersistingL2Cache`` once queued work is done). Such lines
outlive the L2 flush below, whose writes have normal priority: smemkit's re-read kernels keep the
rows they read again that way, so a kernel timed after them on the same inputs found part of them
in L2. Measured on the H200 (commit 75e5a3a): a regs kernel timed after the re-read candidates ran
1-6 % faster than after a cluster kernel, at the same SM clock and shared-memory carveout; a read
of 32 MB after an evict_last read of it ran 0.90x the time after a plain read, 0.99x with the
reset. Against an evict_last read of another buffer (commit 5242e88): 0.87-0.92x without the
reset, 0.98-1.01x with it, and the lars regs kernel at 4K ran 1.5-1.8 % faster right after a
re-read kernel on the same inputs than after one on a copy of them. With the reset, the CREDIT
calibration's T_B and the head to head of the same kernel agree within 2 % at 30 and 29 of 30
points in two evaluations (without it: 2-6 % apart at four points, 1.5 % at a fifth). The reset
runs once per timed loop: a kernel that keeps its own lines with evict_last still finds them in
its next repetition (smemkit's re-read kernels: within 1 % of a reset before every repetition,
commit 75e5a3a; torch.compile's, Triton's and smemkit's kernels at five reduction points:
0.988-1.007x, commit 58d2245).

The reset is not free: the offload ring (``smemkit.offload.ring_gemm``: chunked host copies and
GEMMs on two streams) ran 2-3.5 % slower in processes that reset before each timed loop than in
processes that did not, alternating (commit df9f2f1; the whole copy and cuBLAS were unchanged,
and setting the persisting-L2 limit back after each reset recovered a third of it). So
``reset_persisting_l2=False`` leaves it out, for measurements in which nothing keeps L2 lines
with evict_last (the offload benchmarks pass it to every timing of their process).

``graph=True`` captures one call in a CUDA graph and times its replays, so the host-side cost
of launching (Python, argument checks) stays out and the GPU time is what is measured.
``flush_l2=True`` evicts the L2 before each repetition, so inputs come from HBM rather than from a
cache warmed by the previous repetition. ``flush_kind="fill"`` (the default) overwrites a buffer
twice the L2 size (``triton.testing.do_bench`` likewise zeroes a 256 MB buffer); the L2 is then
full of dirty lines that the timed call writes back to HBM as it evicts them. Measured on the H200
(commit 1a9c5e4): a bf16 GEMV over a 117 MB weight ran 42.4 us after a fill, 34.0 us after
``flush_kind="read"`` (a sum over a buffer twice the L2 size, which leaves clean lines) and
33.2 us with no flush; over 470 MB, 126.4 / 111.4 / 110.7 us. After a fill whose lines were then
dropped without write-back (``discard.global.L2``: nothing cached, nothing owed) the GEMVs ran
34.0 / 113.0 us against 34.1 / 115.9 after the read (commit 73329c1; 42.6 / 123.8 after the
fill), and a read of three L2s times the same after both (tests/gpu): for ops of at least twice
the L2 the read flush leaves no write-back behind. Whether it evicts lines a smaller op would
reuse could not be told by timing: a 32 MB read ran 12.2 us after the read flush, 18.8 after the
discarded fill and 17.6 unflushed (commit 73329c1). Comparisons between kernels of one workload
are made after the same fill (the reduction benchmarks); a time held against a bandwidth bound
(the offload benchmarks' ideal) uses the read, or it carries up to an L2 of write-back that the
timed call never caused.

:func:`time_both_modes` times a call both ways (graph replays and launches from Python, each
L2-flushed) and keeps the faster median: inside benchmarks/reduction.py's process the graph
replays of several kernels (smemkit's cluster kernels, torch.compile's) measured 5-12 % slower
than launches of the same kernel on the same data, which carry host overhead on top, while
alone they matched (commit d1679d0). Graph replays timed right after a compilation or capture
meet the warm-up effect above; with the time-based warm-up the two modes agree (graph > 1.03x
launch at 6 of 527 benchmark records, commit 4ccc825; 118 of 527 without it, commit ec6845a).
A launch can only add time, so the faster mode stays the better estimate.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call over ``samples`` repetitions."""

    median_ms: float
    p20_ms: float
    p80_ms: float
    samples: int

    @classmethod
    def of(cls, times_ms: list[float]) -> Timing:
        ordered = sorted(times_ms)
        n = len(ordered)
        return cls(
            median_ms=statistics.median(ordered),
            p20_ms=ordered[int(0.2 * (n - 1))],
            p80_ms=ordered[int(0.8 * (n - 1))],
            samples=n,
        )


FLUSH_KINDS = ("fill", "read")


def _check_flush_kind(kind: object) -> None:
    if kind not in FLUSH_KINDS:
        raise InvalidArgumentError(f"flush_kind={kind!r}: one of {', '.join(map(repr, FLUSH_KINDS))}")


def _l2_flusher(kind: str = "fill") -> Callable[[], None]:
    """A call that evicts the L2 (module docstring): ``fill`` writes twice the L2 size, ``read``
    sums a buffer of that size (zeroed once, here), leaving only clean lines."""
    _check_flush_kind(kind)
    nbytes = max(2 * torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size, 1 << 20)
    if kind == "fill":
        scratch = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        return lambda: scratch.fill_(1)
    clean = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")  # kind == "read"
    return lambda: clean.sum()


WARM_MS = 25.0


def _reset_persisting_l2() -> None:
    """Return L2 lines kept by an evict_last / persisting policy to normal priority, after the
    work queued so far (module docstring). GPUs without such lines have nothing to reset; where
    the driver refuses, the timing goes on (it is a clean-up of the measurement) with a warning."""
    from cuda.bindings import driver

    torch.cuda.synchronize()
    (err,) = driver.cuCtxResetPersistingL2Cache()
    if int(err) not in (0, int(driver.CUresult.CUDA_ERROR_NOT_SUPPORTED)):
        _warn_reset_failed(str(err))


@cache
def _warn_reset_failed(error: str) -> None:
    warnings.warn(f"could not reset the L2's persisting lines before a timing ({error}): kernels "
                  "timed after ones that keep lines with evict_last may read some inputs from L2",
                  RuntimeWarning, stacklevel=3)


def _keep_busy(call: Callable[[], object], flush: Callable[[], None] | None, warm_ms: float) -> None:
    """Run ``call`` (after ``flush``) in batches of 8 until ``warm_ms`` have passed on the GPU's
    clock (events around the batches; a synchronisation after each batch)."""
    if warm_ms <= 0:
        return
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for _ in range(8):
            if flush:
                flush()
            call()
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        if start.elapsed_time(end) >= warm_ms:
            return


def time_gpu(fn: Callable[[], object], *, warmup: int = 3, reps: int = 20, graph: bool = False,
             flush_l2: bool = False, flush_kind: str = "fill", warm_ms: float = WARM_MS,
             reset_persisting_l2: bool = True) -> Timing:
    """Time ``fn`` (which launches GPU work on the current stream) with CUDA events, after
    ``warmup`` calls, a reset of the L2's persisting lines (unless ``reset_persisting_l2`` is
    False) and ``warm_ms`` of back-to-back calls; ``flush_l2`` evicts the L2 before each
    repetition the ``flush_kind`` way (module docstring)."""
    if not math.isfinite(warm_ms):
        raise InvalidArgumentError(f"warm_ms={warm_ms}: a finite number of milliseconds (0: none)")
    _check_flush_kind(flush_kind)  # before any GPU work, also when nothing is flushed
    flush = _l2_flusher(flush_kind) if flush_l2 else None
    return _time(fn, warmup, reps, graph, flush, warm_ms, reset_persisting_l2)


def _time(fn: Callable[[], object], warmup: int, reps: int, graph: bool,
          flush: Callable[[], None] | None, warm_ms: float, reset: bool = True) -> Timing:
    """``time_gpu`` with the L2 flusher given (``time_both_modes`` builds one for both modes)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    call: Callable[[], object] = fn
    if graph:
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            fn()
        captured.replay()
        call = captured.replay
    if reset:
        _reset_persisting_l2()
    _keep_busy(call, flush, warm_ms)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends, strict=True):
        if flush:
            flush()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return Timing.of([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)])


@dataclass(frozen=True)
class ModeTiming:
    """A call timed as CUDA-graph replays (None when it cannot be captured) and as launches from
    Python, both with the L2 flushed; ``best`` is the one with the smaller median."""

    graph: Timing | None
    launch: Timing

    @property
    def best(self) -> Timing:
        if self.graph is None or self.launch.median_ms < self.graph.median_ms:
            return self.launch
        return self.graph

    @property
    def mode(self) -> str:
        """"graph" or "launch": which timing ``best`` is."""
        return "graph" if self.best is self.graph else "launch"


def time_both_modes(fn: Callable[[], object], *, warmup: int = 5, reps: int = 30) -> ModeTiming:
    """Time ``fn`` as graph replays and as launches, each L2-flushed (module docstring); a call
    that cannot be captured (RuntimeError) is timed as launches only."""
    flush = _l2_flusher()
    try:
        graph = _time(fn, warmup, reps, True, flush, WARM_MS)
    except RuntimeError:
        graph = None
    return ModeTiming(graph, _time(fn, warmup, reps, False, flush, WARM_MS))
