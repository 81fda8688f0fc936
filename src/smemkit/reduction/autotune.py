"""Measured variant choice, once per (GPU, workload, shape class), remembered on disk.

``run(..., autotune=True)`` (or ``SMEMKIT_AUTOTUNE=1``) times every legal variant on the call's
own tensors the first time a (GPU, spec, row class, width) is seen, keeps the fastest, and
records the timings in the kernel cache's record ``autotune/<gpu>`` (runtime.cache); later calls
(in any process) read the record. Rows are grouped by power of two: the waves, not the exact count, decide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterable

from smemkit.errors import InvalidArgumentError
from smemkit.reduction.codegen import Variant
from smemkit.reduction.spec import ReductionSpec
from smemkit.runtime import cache

ENV = "SMEMKIT_AUTOTUNE"


def enabled(flag: bool | None) -> bool:
    """An explicit ``autotune=`` wins; otherwise the environment variable decides."""
    return flag if flag is not None else os.environ.get(ENV, "0") not in ("", "0")


def shape_key(spec: ReductionSpec, M: int, N: int) -> str:
    """Spec fingerprint (its full definition), row class (next power of two) and width."""
    fingerprint = hashlib.sha256(repr(spec).encode()).hexdigest()[:16]
    row_class = 1 << max(M - 1, 0).bit_length()
    return f"{spec.name}:{fingerprint}:M{row_class}:N{N}"


def _encode(v: Variant) -> dict:
    """Every field of the variant, so that the record rebuilds the same kernel."""
    return dataclasses.asdict(v)


def _decode(best: dict) -> Variant | None:
    """The recorded variant, or None for a record that does not name every field (written by an
    older smemkit, which dropped some) or names an invalid one: the shape is then tuned again."""
    if set(best) != {f.name for f in dataclasses.fields(Variant)}:
        return None
    try:
        return Variant(**best)
    except InvalidArgumentError:
        return None


def tuned_variant(spec: ReductionSpec, M: int, N: int, gpu: str, candidates: Iterable[Variant],
                  time_ms: Callable[[Variant], float]) -> Variant:
    """The recorded winner for this GPU and shape when it is still a candidate, else the fastest
    candidate by ``time_ms`` (which is then recorded with every candidate's time)."""
    record_name = "autotune/" + "".join(c if c.isalnum() else "_" for c in gpu)
    key = shape_key(spec, M, N)
    candidates = list(candidates)
    hit = cache.read_record(record_name).get(key)
    recorded = _decode(hit["best"]) if hit else None
    if recorded in candidates:  # a winner that can no longer run here (Triton gone) is tuned again
        return recorded
    times = {v: time_ms(v) for v in candidates}
    best = min(times, key=times.get)
    cache.update_record(record_name, key, {"best": _encode(best),
                                           "ms": {v.label: t for v, t in times.items()}})
    return best
