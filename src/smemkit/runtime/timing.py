"""Timing GPU work with CUDA events: warm-up first, one event pair per repetition, median.

``graph=True`` captures one call in a CUDA graph and times its replays, so the host-side cost
of launching (Python, argument checks) stays out and the GPU time is what is measured.
``flush_l2=True`` overwrites a buffer twice the L2 size before each repetition, so inputs come
from HBM rather than from a cache warmed by the previous repetition.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch


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


def _l2_flusher() -> Callable[[], None]:
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    scratch = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
    return lambda: scratch.fill_(1)


def time_gpu(fn: Callable[[], object], *, warmup: int = 3, reps: int = 20, graph: bool = False,
             flush_l2: bool = False) -> Timing:
    """Time ``fn`` (which launches GPU work on the current stream) with CUDA events."""
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
    flush = _l2_flusher() if flush_l2 else None
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
