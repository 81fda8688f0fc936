"""The prefetch baseline's staging-slot plan (pure) and the baselines' input checks (no GPU)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.baselines import TwoPartLinear, staging_slots, uva_offload
from smemkit.offload.hf_layout import LinearSplit


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 32, 33, 81])
def test_neighbours_never_share_a_slot(n):
    slots = staging_slots(n)
    assert len(slots) == n
    assert max(slots) <= 2
    if n > 1:
        # unit u + 1 is copied while unit u computes, around the step boundary too
        for u in range(n):
            assert slots[u] != slots[(u + 1) % n], (n, u, slots)
    assert len(set(slots)) == (1 if n == 1 else 2 if n % 2 == 0 else 3)


def test_slot_plan_rejects_no_units():
    with pytest.raises(InvalidArgumentError, match="n_units"):
        staging_slots(0)


def test_two_part_linear_joins_the_parts_then_adds_the_bias():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(48, 16, generator=g, dtype=torch.float64)
    b = torch.randn(48, generator=g, dtype=torch.float64)
    x = torch.randn(5, 16, generator=g, dtype=torch.float64)
    for host_rows in (0, 16, 48):
        mod = TwoPartLinear(w[: 48 - host_rows], w[48 - host_rows:], b)
        torch.testing.assert_close(mod(x), x @ w.T + b, rtol=0, atol=1e-12)


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(8, 32, bias=False)


class _Layout:
    def __init__(self, linears):
        self.linears = linears


def test_uva_needs_the_model_on_a_gpu_and_matching_names():
    model = _Tiny()
    layout = _Layout((LinearSplit("lm_head", "lm_head", 32, 8, False, 16),))
    with pytest.raises(InvalidArgumentError, match="CUDA device"):
        uva_offload(model, layout)
    wrong = _Layout((LinearSplit("model.lm_head", "lm_head", 32, 8, False, 16),))
    with pytest.raises(InvalidArgumentError, match="lacks"):
        uva_offload(model, wrong)
    shape = _Layout((LinearSplit("lm_head", "lm_head", 64, 8, False, 16),))
    with pytest.raises(InvalidArgumentError, match="shape"):
        uva_offload(model, shape)
