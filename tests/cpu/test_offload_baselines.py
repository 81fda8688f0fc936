"""The prefetch baseline's staging-slot plan (pure) and the baselines' input checks (no GPU)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.baselines import uva_offload
from smemkit.offload.hf_layout import LinearSplit
from smemkit.offload.prefetch import TwoPartLinear, staging_bytes_of, staging_slots


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
    def __init__(self, linears, experts=()):
        self.linears = linears
        self.experts = experts


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
    moe = _Layout((LinearSplit("lm_head", "lm_head", 32, 8, False, 16),), experts=("L0.experts",))
    with pytest.raises(InvalidArgumentError, match="offload linears only"):
        uva_offload(model, moe)


def test_staging_bytes_are_the_largest_unit_per_slot():
    host = {f"model.layers.{i}.mlp.up_proj": 100 * (i + 1) for i in range(4)}
    host["model.layers.0.self_attn.q_proj"] = 7
    host["lm_head"] = 1000
    host["model.layers.9.mlp.down_proj"] = 0  # nothing to stage: no unit
    # units: layers 0-3 (107, 200, 300, 400), lm_head (1000): slots 0, 1, 0, 1, 2
    assert staging_bytes_of(host) == 300 + 400 + 1000
    assert staging_bytes_of({"lm_head": 0}) == 0


def test_plan_layout_adds_the_staging_slots_and_replans_under_a_budget():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hf_tiny_models import tiny

    from smemkit.offload.hf_model import plan_layout

    model = tiny("llama")
    direct = plan_layout(model, ratio=0.3, batch=3, max_seq_len=14, offload_kv=False)
    staged = plan_layout(model, ratio=0.3, batch=3, max_seq_len=14, offload_kv=False, host_path="prefetch")
    assert direct.staging_bytes == 0 and staged.staging_bytes > 0
    assert staged.linears == direct.linears  # a ratio fixes the split; staging only adds HBM
    budget = (direct.hbm_bytes + direct.workspace_bytes + staged.staging_bytes) / 2**30
    tight = plan_layout(model, gpu_mem_gib=budget, batch=3, max_seq_len=14, offload_kv=False,
                        host_path="prefetch")
    assert tight.staging_bytes > 0
    assert tight.hbm_bytes + tight.workspace_bytes + tight.staging_bytes <= budget * 2**30
    with pytest.raises(InvalidArgumentError, match="host_path"):
        plan_layout(model, ratio=0.3, batch=3, max_seq_len=14, host_path="uva")


def test_prefetch_needs_a_gpu_placement():
    from smemkit.offload.hf_model import resolve_host_path
    from smemkit.offload.placement import CpuPlacement

    cpu = CpuPlacement()
    assert resolve_host_path(None, cpu) == "direct"
    with pytest.raises(InvalidArgumentError, match="GPU placement"):
        resolve_host_path("prefetch", cpu)


def test_random_tensors_build_a_meta_model_in_place_deterministically():
    import sys
    from pathlib import Path

    import transformers

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hf_tiny_models import CONFIGS

    from smemkit.offload.e2e import RandomTensors
    from smemkit.offload.hf_model import offload_from_source, plan_layout
    from smemkit.offload.placement import CpuPlacement

    def build():
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(CONFIGS["llama"](), dtype=torch.bfloat16)
        source = RandomTensors(model, seed=3, device="cpu")
        assert not any("inv_freq" in n for n in source.names())  # rebuilt from the config, not random
        layout = plan_layout(model, ratio=0.3, batch=3, max_seq_len=14)
        return offload_from_source(model, source, layout, CpuPlacement(), gpu_budget=None), source

    (a, source), (b, _) = build(), build()
    assert torch.equal(source.get("model.norm.weight"), torch.ones(64, dtype=torch.bfloat16))
    w = source.get("model.layers.1.mlp.up_proj.weight")
    assert torch.equal(w, source.get("model.layers.1.mlp.up_proj.weight"))
    assert 0.015 < float(w.float().std()) < 0.025
    ids = torch.randint(0, 256, (3, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        la, lb = a.model(ids).logits, b.model(ids).logits
    assert torch.equal(la, lb) and torch.isfinite(la).all()
    inv = a.model.model.rotary_emb.inv_freq
    assert float(inv[0]) == 1.0 and not inv.is_meta
    with pytest.raises(InvalidArgumentError, match="no tensor"):
        source.get("model.layers.9.mlp.up_proj.weight")


def test_staging_that_cannot_settle_under_a_budget_is_a_fit_error():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hf_tiny_models import tiny

    from smemkit.offload.hf_layout import OffloadFitError
    from smemkit.offload.hf_model import plan_layout

    model = tiny("llama")  # 2 layers + the head: 3 units, each alone in its slot
    direct = plan_layout(model, ratio=0.3, batch=3, max_seq_len=14, offload_kv=False)
    staged = plan_layout(model, ratio=0.3, batch=3, max_seq_len=14, offload_kv=False, host_path="prefetch")
    budget = (direct.hbm_bytes + direct.workspace_bytes + staged.staging_bytes // 4) / 2**30
    with pytest.raises(OffloadFitError, match="gpu_mem_gib"):
        plan_layout(model, gpu_mem_gib=budget, batch=3, max_seq_len=14, offload_kv=False,
                    host_path="prefetch")
