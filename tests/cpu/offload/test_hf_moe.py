"""Mixture-of-experts models offloaded without a GPU: configs, the experts op, layout, generate.

Tiny random Mixtral and Qwen3-MoE models (4 experts, 2 per token) are placed on the CPU
(``CpuPlacement``): whole experts go to the host part, the experts module's loop computes what
transformers' eager experts do, so generate and the logits are bit for bit the reference's.
The routed-expert kernel compiles for sm_90a without spills and its constants match the source.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hf_tiny_models import BATCH, MAX_SEQ, MOE_ARCHS, MOE_CONFIGS, NEW, greedy, prompts, tiny  # noqa: E402

from smemkit.errors import InvalidArgumentError  # noqa: E402
from smemkit.offload import CpuPlacement, config_from_hf, decode_ops, offload_model  # noqa: E402
from smemkit.offload.experts import OffloadedExperts  # noqa: E402
from smemkit.offload.hf_layout import host_experts_across_layers  # noqa: E402
from smemkit.offload.hf_model import plan_layout  # noqa: E402
from smemkit.offload.models import BUILTIN_MODELS  # noqa: E402


def moe(arch: str, seed: int = 0):
    return tiny(arch, seed=seed, configs=MOE_CONFIGS)


def test_moe_configs_plan_one_experts_op_per_layer():
    cfg = config_from_hf(MOE_CONFIGS["qwen3_moe"]().to_dict())
    assert (cfg.num_experts, cfg.experts_per_token, cfg.intermediate_size) == (4, 2, 128)
    ops = decode_ops(cfg, batch=3, seq=16)
    experts = [op for op in ops if op.kind == "experts"]
    assert len(experts) == cfg.num_hidden_layers and not any(op.kind == "gate_proj" for op in ops)
    op = experts[0]
    assert op.weight_bytes == 4 * 3 * 64 * 128 * 2
    assert op.flops == 2 * 3 * 2 * 3 * 64 * 128  # each of 3 tokens through 2 experts
    assert op.read_fraction == pytest.approx(1 - (1 - 2 / 4) ** 3)
    mixtral = BUILTIN_MODELS["mixtral-8x7b"]
    total = sum(op.weight_bytes for op in decode_ops(mixtral, 1, 1))
    assert 92e9 < total < 94e9  # Mixtral-8x7B in bf16 is 46.7 B parameters
    one = [op for op in decode_ops(mixtral, 1, 1) if op.kind == "experts"][0]
    assert one.read_fraction == pytest.approx(0.25)  # one token reads 2 of 8 experts


@pytest.mark.parametrize(("change", "match"), [
    (dict(model_type="qwen2_moe"), "MoE types supported"),
    (dict(mlp_only_layers=[1]), "every layer must be MoE"),
    (dict(decoder_sparse_step=2), "every layer must be MoE"),
    (dict(num_experts_per_tok=5), "experts_per_token"),
])
def test_moe_configs_it_cannot_run_are_refused(change, match):
    data = MOE_CONFIGS["qwen3_moe"]().to_dict()
    data.update(change)
    with pytest.raises(InvalidArgumentError, match=match):
        config_from_hf(data)


def test_host_experts_round_once_across_layers():
    assert host_experts_across_layers([8] * 4, [0.01] * 4) == [1, 0, 0, 0]  # 0.32 experts: one, not four
    assert host_experts_across_layers([8] * 4, [0.25] * 4) == [2] * 4
    # 2.4 + 0.8 + 7.2 = 10.4 -> 11: the whole parts 2, 0, 7, then the largest remainders (0.8, 0.4)
    assert host_experts_across_layers([8] * 3, [0.3, 0.1, 0.9]) == [3, 1, 7]
    got = host_experts_across_layers([8] * 3, [0.3, 0.1, 0.9], total=10)
    assert sum(got) == 10 and all(0 <= n <= 8 for n in got)
    assert host_experts_across_layers([8] * 2, [0.5, 0.5], total=0) == [0, 0]
    assert host_experts_across_layers([8] * 2, [1.0, 1.0]) == [8, 8]


def test_a_budget_puts_whole_experts_where_the_cost_model_says():
    """Mixtral-8x7B, batch 8, 4K: under a 94 GiB budget nothing must move, and phase 1's 1.27 % of
    each layer's experts would be four whole experts making four layers host-bound; the layout
    keeps them in HBM. Under tighter budgets the offloaded bytes stay within a tile of required."""
    from smemkit.offload.e2e import hf_config, realised_step_s

    config = hf_config("mixtral-8x7b")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    loose = plan_layout(model, gpu_mem_gib=94, batch=8, max_seq_len=4096, workspace_gib=0, profile="h200_sxm")
    assert sum(e.host_experts for e in loose.experts) == 0
    assert realised_step_s(loose, "h200_sxm") <= loose.plan.time_s * 1.05
    for gib in (85, 60, 40):
        tight = plan_layout(model, gpu_mem_gib=gib, batch=8, max_seq_len=4096, workspace_gib=0,
                            profile="h200_sxm")
        assert tight.offloaded_bytes >= tight.plan.required_bytes
        assert tight.offloaded_bytes <= tight.plan.required_bytes + 2**30
        counts = {e.host_experts for e in tight.experts}
        assert max(counts) - min(counts) <= 1  # spread evenly over the layers


def test_host_experts_round_up_to_whole_experts():
    ratios = (0.0, 1e-9, 0.125, 0.13, 0.5, 0.99, 1.0)
    assert [host_experts_across_layers([8], [r])[0] for r in ratios] == [0, 1, 1, 2, 4, 8, 8]


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_layout_splits_experts_whole_and_counts_their_bytes(arch):
    model = moe(arch)
    layout = plan_layout(model, ratio=0.3, batch=BATCH, max_seq_len=MAX_SEQ)
    # 0.3 x 4 experts x 2 layers = 2.4: three whole experts in all, not ceil(1.2) = 2 per layer
    assert sorted(e.host_experts for e in layout.experts) == [1, 2]
    expert_bytes = 3 * 64 * 128 * 2
    assert layout.weight_host_bytes == sum(s.host_rows * s.in_features * 2 for s in layout.linears) + \
        3 * expert_bytes
    assert sorted(layout.ratios[f"model.layers.{i}.mlp.experts"] for i in (0, 1)) == [0.25, 0.5]
    free = plan_layout(model, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ, workspace_gib=0)
    budget = free.hbm_bytes * 0.7
    tight = plan_layout(model, gpu_mem_gib=budget / 2**30, batch=BATCH, max_seq_len=MAX_SEQ, workspace_gib=0)
    assert tight.hbm_bytes <= budget
    # the greedy plan puts host-bound bytes on the experts first: they are read 1 - (1/2)^3 of the time
    experts_share = sum(e.host_experts for e in tight.experts) / sum(e.num_experts for e in tight.experts)
    dense = [s.ratio for s in tight.linears if ".mlp." not in s.name and s.name != "lm_head"]
    assert experts_share > 0 and experts_share >= max(dense)


@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated")
@pytest.mark.parametrize("arch", MOE_ARCHS)
@pytest.mark.parametrize("ratio", [0.3, 0.8])
def test_offloaded_moe_generates_bit_for_bit(arch, ratio):
    ref = moe(arch)
    ids = prompts()
    want = greedy(ref, ids)
    parts = {n: (m.gate_up_proj.detach().clone(), m.down_proj.detach().clone())
             for n, m in ref.named_modules() if hasattr(m, "gate_up_proj")}
    model = copy.deepcopy(ref)
    off = offload_model(model, ratio=ratio, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    placed = {e.name: e.host_experts for e in off.layout.experts}
    assert sum(placed.values()) == math.ceil(ratio * 4 * 2)  # rounded once across the two layers
    for name, (gate_up, down) in parts.items():
        module = model.get_submodule(name)
        host = placed[name]
        assert isinstance(module, OffloadedExperts) and module.host_experts == host
        assert torch.equal(module.gate_up_hbm, gate_up[: 4 - host])
        assert torch.equal(module.gate_up_host, gate_up[4 - host:])
        assert torch.equal(torch.cat([module.down_hbm, module.down_host]), down)
        assert not module.uses_kernel(1)  # no GPU: the per-expert loop
    got = off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                       do_sample=False)
    assert torch.equal(got, want)
    with torch.no_grad():
        assert torch.equal(model(want, use_cache=False).logits, ref(want, use_cache=False).logits)
    off.free()
    assert all(m.gate_up_host.numel() == 0 for m in model.modules() if isinstance(m, OffloadedExperts))


def test_routed_expert_kernel_compiles_without_spills_and_mirrors_match():
    from smemkit.offload import moe_gemv

    for dtype in (torch.bfloat16, torch.float16):
        usage = moe_gemv.compile_variant(dtype, "sm_90a").resources["moe_gemv"]
        assert not usage.spills and usage.stack_bytes == 0, usage
        assert usage.registers * moe_gemv.THREADS <= 65536
    consts = moe_gemv.source_constants()
    assert (consts["THREADS"], consts["TILE_ROWS"], consts["MAX_PAIRS"], consts["VEC"]) == (
        moe_gemv.THREADS, moe_gemv.TILE_ROWS, moe_gemv.MAX_PAIRS, moe_gemv.VEC)
    assert consts["WARPS"] * consts["ROWS_PER_WARP"] == consts["TILE_ROWS"]
    assert moe_gemv.grid_size(33, 5, 2, 7) == 7 + 2 * 3 and moe_gemv.grid_size(33, 5, 5, 7) == 5 * 3


@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated")
@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_a_released_layout_moe_checkpoint_loads_expert_by_expert(tmp_path, arch):
    """save_pretrained writes each expert's matrices separately (Mixtral: block_sparse_moe.experts.<e>.w1,
    w3, w2; Qwen3-MoE: mlp.experts.<e>.gate_proj, ...), as released checkpoints do; the loader stacks
    them into the experts module and the model generates the reference's tokens bit for bit."""
    from safetensors import safe_open

    from smemkit.offload import load_offloaded

    ref = moe(arch)
    ref.save_pretrained(tmp_path, safe_serialization=True)
    with safe_open(str(next(tmp_path.glob("*.safetensors"))), "pt") as f:
        keys = set(f.keys())
    assert not any(k.endswith("gate_up_proj") for k in keys)  # the per-expert layout, not the fused one
    ids = prompts()
    want = greedy(ref, ids)
    off = load_offloaded(tmp_path, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    assert [e.host_experts for e in off.layout.experts] == [2, 2]
    for name, module in ref.named_modules():
        if hasattr(module, "gate_up_proj"):
            loaded = off.model.get_submodule(name)
            assert isinstance(loaded, OffloadedExperts) and loaded.host_experts == 2  # 0.5 x 4 each
            assert torch.equal(torch.cat([loaded.gate_up_hbm, loaded.gate_up_host]), module.gate_up_proj)
            assert torch.equal(torch.cat([loaded.down_hbm, loaded.down_host]), module.down_proj)
    got = off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                       do_sample=False)
    assert torch.equal(got, want)


def test_released_layout_experts_of_unequal_shapes_are_refused():
    from smemkit.offload.hf_checkpoint import HubExpertsTensors

    class Source:
        def __init__(self, tensors):
            self.tensors = tensors

        def names(self):
            return set(self.tensors)

        def get(self, name):
            return self.tensors[name]

    base = "model.layers.0.mlp.experts"
    good = {f"{base}.{e}.{m}.weight": torch.full((4 if m != "down_proj" else 6, 6 if m != "down_proj" else 4),
                                                 float(e)) for e in range(3)
            for m in ("gate_proj", "up_proj", "down_proj")}
    stacked = HubExpertsTensors(Source(good))
    gate_up = stacked.get(f"{base}.gate_up_proj")
    assert gate_up.shape == (3, 8, 6) and torch.equal(gate_up[2], torch.full((8, 6), 2.0))
    assert stacked.get(f"{base}.down_proj").shape == (3, 6, 4)
    bad = dict(good)
    bad[f"{base}.1.up_proj.weight"] = torch.zeros(4, 5)
    with pytest.raises(InvalidArgumentError, match="other experts"):
        HubExpertsTensors(Source(bad)).get(f"{base}.gate_up_proj")


def test_the_workspace_counts_k_experts_per_token_and_one_expert_copy():
    from dataclasses import replace as dc_replace

    from smemkit.offload.hf_layout import FIXED_WORKSPACE_BYTES, workspace_bytes

    moe_cfg = BUILTIN_MODELS["mixtral-8x7b"]
    dense = dc_replace(moe_cfg, num_experts=0, experts_per_token=0)
    extra = workspace_bytes(moe_cfg, 1, 16) - workspace_bytes(dense, 1, 16)
    assert extra == 16 * 3 * 14336 * 2 * (2 - 1) + 3 * 4096 * 14336 * 2
    assert workspace_bytes(dense, 1, 16) > FIXED_WORKSPACE_BYTES
