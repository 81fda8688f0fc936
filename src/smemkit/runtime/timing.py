"""Timing GPU work with CUDA events: warm-up first, one event pair per repetition, median."""

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


def time_gpu(fn: Callable[[], object], *, warmup: int = 3, reps: int = 20) -> Timing:
    """Time ``fn`` (which launches GPU work on the current stream) with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends, strict=False):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return Timing.of([s.elapsed_time(e) for s, e in zip(starts, ends, strict=False)])
