"""Hypothesis strategies for offload planning instances (random ops and device rates)."""

from __future__ import annotations

from hypothesis import strategies as st

from smemkit.offload import Hardware, Op, total_bytes


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Floats spread over decades, so every regime (HBM-, compute-, host-bound) shows up."""
    import math

    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: 10.0**e)


@st.composite
def instances(draw, max_ops: int = 10, read_fractions: bool = False):
    """(ops, hw, required_bytes): random weights, arithmetic intensities, rates and budget; with
    ``read_fractions`` some ops read only a share of their bytes per step (MoE experts)."""
    hw = Hardware(hbm_bytes_per_s=draw(log_uniform(1e11, 1e13)),
                  host_bytes_per_s=draw(log_uniform(1e9, 2e12)),
                  flops_per_s=draw(log_uniform(1e12, 1e16)))
    n = draw(st.integers(1, max_ops))
    ops = []
    for i in range(n):
        w = draw(log_uniform(1e3, 1e11))
        intensity = draw(st.one_of(st.just(0.0), log_uniform(1e-2, 1e6)))  # FLOP per byte
        f = draw(st.one_of(st.just(1.0), st.sampled_from([0.25, 0.875]), st.floats(0.01, 1.0))) \
            if read_fractions else 1.0
        ops.append(Op(f"op{i}", f"k{i % 3}", w, w * intensity, read_fraction=f))
    frac = draw(st.one_of(st.sampled_from([0.0, 1.0, 1e-4, 0.5]), st.floats(0.0, 1.0)))
    total = total_bytes(ops)
    return ops, hw, min(total, frac * total)
