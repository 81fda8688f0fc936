"""Float64 view of the hand-written SPEC §1 implementations, and random inputs for tests."""

from __future__ import annotations

from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs


def _float64(fn):
    def call(tensors, scalars):
        return fn({k: v.double() for k, v in tensors.items()}, scalars)

    return call


HANDWRITTEN = {name: _float64(fn) for name, fn in EAGER.items()}

make_inputs = example_inputs
