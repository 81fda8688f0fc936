"""Offloading Hugging Face models without a GPU: layout, generate, fit errors, the split KV cache.

Every part is placed on the CPU (``CpuPlacement``: the same row and sequence splits, ordinary
memory), so these tests check which rows and sequences went where and that the offloaded model
still computes exactly what the original does: its split linear multiplies by the two parts
joined, so generate's tokens and the logits are bit for bit the reference's.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")

from hf_tiny_models import BATCH, COMMON, CONFIGS, MAX_SEQ, NEW, greedy, prompts, tiny  # noqa: E402

from smemkit.errors import InvalidArgumentError  # noqa: E402
from smemkit.offload import (  # noqa: E402
    CpuPlacement,
    OffloadFitError,
    host_rows_for_ratio,
    host_seqs_for_ratio,
    offload_model,
)
from smemkit.offload.hf_layout import TILE_ROWS, host_rows_at_least, op_of_linear  # noqa: E402
from smemkit.offload.hf_model import plan_layout  # noqa: E402
from smemkit.offload.pinned import TILE_ROWS as SPLIT_WEIGHT_TILE  # noqa: E402


def linear_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: m.weight.detach().clone() for n, m in model.named_modules() if isinstance(m, nn.Linear)}


# ---- planning and layout ------------------------------------------------------------------------

@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_every_linear_gets_its_ops_ratio(arch):
    model = tiny(arch)
    names = {n for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    layout = plan_layout(model, ratio=0.4, batch=BATCH, max_seq_len=MAX_SEQ)
    assert set(layout.ratios) == names
    ops = {op.name: op for op in layout.ops}
    planned = dict(zip(ops, layout.plan.ratios, strict=True))
    for split in layout.linears:
        assert split.op == op_of_linear(split.name) and split.op in ops
        assert split.ratio >= planned[split.op] - 1e-12  # host rows rounded up to whole tiles
        assert host_rows_for_ratio(split.out_features, split.ratio) == split.host_rows
    assert {c.op for c in layout.caches} == {n for n, op in ops.items() if op.kind == "attention"}
    for cache in layout.caches:
        assert cache.host_seqs == host_seqs_for_ratio(BATCH, planned[cache.op])


def test_op_names_of_hf_linears():
    assert op_of_linear("model.layers.3.self_attn.k_proj") == "L3.qkv_proj"
    assert op_of_linear("model.decoder.layers.0.self_attn.out_proj") == "L0.o_proj"
    assert op_of_linear("model.decoder.layers.11.fc2") == "L11.fc2"
    assert op_of_linear("model.layers.1.mlp.down_proj") == "L1.down_proj"
    assert op_of_linear("lm_head") == "lm_head"
    assert op_of_linear("model.layers.0.mlp.router") is None


def test_host_rows_at_least_is_the_smallest_split_splitweight_makes():
    assert TILE_ROWS == SPLIT_WEIGHT_TILE
    for n in (1, 7, 16, 17, 64, 100, 257):
        allowed = sorted({0, n, *(n - m * TILE_ROWS for m in range(n // TILE_ROWS + 1))})
        for ratio in (0.0, 1e-9, 0.01, 0.1, 0.25, 0.3333, 0.5, 0.9, 1.0):
            rows = host_rows_at_least(n, ratio)
            assert rows == min(h for h in allowed if h >= ratio * n * (1 - 1e-12)), (n, ratio)
            assert host_rows_for_ratio(n, rows / n) == rows


@pytest.mark.parametrize("plan", ["greedy", "uniform"])
def test_gpu_budget_is_met_exactly_by_construction(plan):
    model = tiny("llama")
    free = plan_layout(model, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ, workspace_gib=0)
    planned_total = sum(op.weight_bytes for op in free.ops)
    for share in (0.05, 0.3, 0.7, 0.97):
        budget = free.other_hbm_bytes + (1 - share) * planned_total
        layout = plan_layout(model, gpu_mem_gib=budget / 2**30, plan=plan, batch=BATCH, max_seq_len=MAX_SEQ,
                             workspace_gib=0)
        assert layout.hbm_bytes <= budget
        assert layout.offloaded_bytes >= layout.plan.required_bytes - 1e-6
        assert layout.plan.method.startswith(plan)


def test_layout_bytes_are_what_the_offloaded_model_holds():
    model = tiny("opt")  # biases, a learned position table, a tied embedding
    off = offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    splits = [m.split_weight for m in off.model.modules() if hasattr(m, "split_weight")]
    assert len(splits) == len(off.layout.linears)
    rest = {id(t): t for t in (*off.model.parameters(), *off.model.buffers())}  # norms, biases, positions
    hbm = sum(w.hbm.nbytes for w in splits) + sum(t.nbytes for t in rest.values()) + off.kv_cache.hbm_bytes
    host = sum(w.host.nbytes for w in splits) + off.kv_cache.pinned_bytes
    assert (hbm, host) == (off.hbm_bytes, off.pinned_bytes)
    embedding = off.model.get_input_embeddings()
    head = off.model.get_output_embeddings().split_weight
    assert embedding.hbm is head.hbm and embedding.host is head.host  # tied: one table, shared
    assert off.kv_cache.host_seqs == [host_seqs_for_ratio(BATCH, 0.5)] * 2


def test_an_untied_embedding_lives_in_host_memory():
    model = tiny("llama")
    table = model.get_input_embeddings().weight.detach().clone()
    off = offload_model(model, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    embedding = off.model.get_input_embeddings()
    assert embedding.hbm.shape[0] == 0 and torch.equal(embedding.host, table)
    assert off.pinned_bytes == table.nbytes and off.layout.offloaded_bytes == 0
    ids = prompts()
    assert torch.equal(embedding(ids), table[ids])


# ---- offloaded models compute what the originals do ---------------------------------------------

@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated")  # transformers >= 5.2x names it `cache`
@pytest.mark.parametrize("arch", ["llama", "qwen3", "opt", "mistral"])
def test_offloaded_generate_is_bit_for_bit_the_reference(arch):
    ref = tiny(arch)
    ids = prompts()
    want = greedy(ref, ids)
    weights = linear_weights(ref)
    model = copy.deepcopy(ref)
    off = offload_model(model, ratio=0.6, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    assert off.kv_cache.host_seqs == [2, 2]  # 0.6 x 3 sequences -> 2: sequences 1 and 2 in host memory
    for name, split in ((s.name, s) for s in off.layout.linears):
        part = model.get_submodule(name).split_weight
        n_hbm = split.out_features - split.host_rows
        assert torch.equal(part.hbm, weights[name][:n_hbm]) and torch.equal(part.host, weights[name][n_hbm:])
        assert not isinstance(model.get_submodule(name), nn.Linear)
    got = off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                       do_sample=False)
    assert torch.equal(got, want)
    again = greedy(model, ids, past_key_values=off.cache())  # the cache plugged in by hand
    assert torch.equal(again, want)
    with torch.no_grad():
        assert torch.equal(model(want, use_cache=False).logits, ref(want, use_cache=False).logits)


def test_budget_offload_generates_like_the_reference():
    ref = tiny("qwen2")  # q/k/v biases
    ids = prompts(3)
    want = greedy(ref, ids)
    layout = plan_layout(ref, ratio=0.0, batch=BATCH, max_seq_len=MAX_SEQ, workspace_gib=0)
    budget = layout.hbm_bytes * 0.6
    off = offload_model(copy.deepcopy(ref), gpu_mem_gib=budget / 2**30, batch=BATCH, max_seq_len=MAX_SEQ,
                        workspace_gib=0, placement=CpuPlacement())
    assert off.hbm_bytes <= budget and any(r > 0 for r in off.ratios.values())
    assert torch.equal(off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                                    min_new_tokens=NEW, do_sample=False), want)


# ---- errors before anything moves ---------------------------------------------------------------

def assert_untouched(model):
    assert all(isinstance(m, nn.Linear) for n, m in model.named_modules() if op_of_linear(n))
    assert isinstance(model.get_input_embeddings(), nn.Embedding)


def test_a_budget_below_what_must_stay_in_hbm_names_the_missing_bytes():
    model = tiny("llama")
    with pytest.raises(OffloadFitError, match=r"GPU budget .* bytes \(.*GiB\) missing") as info:
        offload_model(model, gpu_mem_gib=1e-6, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    assert info.value.missing_bytes > 0 and str(info.value.missing_bytes) in str(info.value)
    assert_untouched(model)


def test_short_pinned_or_device_memory_names_the_missing_bytes():
    model = tiny("opt")
    layout = plan_layout(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ)
    with pytest.raises(OffloadFitError, match="pinned host memory") as info:
        offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ,
                      placement=CpuPlacement(pinned_bytes=layout.pinned_bytes - 10))
    assert info.value.missing_bytes == 10 and "10 bytes" in str(info.value)
    # the model's own tensors on the device are freed as their parts are placed: they count as free
    resident = sum(t.nbytes for t in {id(t): t for t in (*model.parameters(), *model.buffers())}.values())
    free = layout.hbm_bytes + layout.workspace_bytes - resident
    with pytest.raises(OffloadFitError, match="free HBM") as info:
        offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ,
                      placement=CpuPlacement(hbm_bytes=free - 1))
    assert info.value.missing_bytes == 1
    assert_untouched(model)
    offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ,
                  placement=CpuPlacement(hbm_bytes=free, pinned_bytes=layout.pinned_bytes))  # exactly enough


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(), "exactly one of gpu_mem_gib"),
    (dict(ratio=0.1, gpu_mem_gib=1.0), "exactly one of gpu_mem_gib"),
    (dict(ratio=1.5), r"ratio must be in \[0, 1\]"),
    (dict(ratio=float("nan")), "ratio must be a finite number"),
    (dict(ratio=0.1, plan="oracle"), "plan='oracle'; allowed: greedy, uniform"),
    (dict(ratio=0.1, batch=0), "batch must be a positive integer"),
    (dict(ratio=0.1, max_seq_len=True), "max_seq_len must be a positive integer"),
])
def test_bad_options_are_refused(kwargs, match):
    args = dict(batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement()) | kwargs
    model = tiny("llama")
    with pytest.raises(InvalidArgumentError, match=match):
        offload_model(model, **args)
    assert_untouched(model)


def test_unsupported_models_are_refused():
    with pytest.raises(InvalidArgumentError, match="bfloat16 or all float16"):
        offload_model(tiny("llama", dtype=torch.float32), ratio=0.1, batch=1, max_seq_len=8,
                      placement=CpuPlacement())
    gpt2 = transformers.GPT2Config(n_embd=64, n_layer=1, n_head=2, vocab_size=128, n_positions=32)
    with pytest.raises(InvalidArgumentError, match="model_type 'gpt2' is not supported"):
        offload_model(transformers.AutoModelForCausalLM.from_config(gpt2), ratio=0.1, batch=1, max_seq_len=8,
                      placement=CpuPlacement())
    done = tiny("llama")
    offload_model(done, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
    with pytest.raises(InvalidArgumentError, match="already offloaded"):
        offload_model(done, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
    opt = transformers.OPTConfig(**COMMON, ffn_dim=128, num_attention_heads=4, word_embed_proj_dim=32)
    with pytest.raises(InvalidArgumentError, match="word_embed_proj_dim"):
        offload_model(transformers.AutoModelForCausalLM.from_config(opt, dtype=torch.bfloat16), ratio=0.1,
                      batch=1, max_seq_len=8, placement=CpuPlacement())


def test_the_cache_refuses_what_it_was_not_planned_for():
    model = tiny("llama")
    off = offload_model(model, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement())
    ids = prompts()
    with pytest.raises(InvalidArgumentError, match="planned for batch 3"):
        off.generate(ids[:2], attention_mask=torch.ones_like(ids[:2]), max_new_tokens=2, do_sample=False)
    with pytest.raises(InvalidArgumentError, match="exceed max_seq_len = 14"):  # the 15th token's K/V
        off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW + 2, min_new_tokens=NEW + 2,
                     do_sample=False)
    with pytest.raises(InvalidArgumentError, match="planned for batch 3.*beam search"):
        off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, num_beams=2, do_sample=False)
    layer = off.kv_cache.layers[0]
    for call in (lambda: layer.reorder_cache(torch.arange(3)), lambda: layer.batch_repeat_interleave(2)):
        with pytest.raises(InvalidArgumentError, match="not supported with the split KV cache"):
            call()
