"""Offloading Hugging Face models without a GPU: planning, layout, fit errors, the checkpoint loader.

Every part is placed on the CPU (``CpuPlacement``: the same row and sequence splits, ordinary
memory), so these tests check which rows and sequences went where, that each checkpoint tensor
is read once with pageable memory held to about one tensor, and that the offloaded model still
computes exactly what the original does (its split linear multiplies by the two parts joined,
so generate's tokens and the logits are bit for bit the reference's). Tiny random models, built
with ``from_config``; nothing is downloaded.
"""

from __future__ import annotations

import copy
import json
import weakref
from collections import Counter
from dataclasses import replace

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from smemkit.errors import InvalidArgumentError  # noqa: E402
from smemkit.offload import (  # noqa: E402
    BUILTIN_MODELS,
    CpuPlacement,
    OffloadFitError,
    config_from_hf,
    decode_ops,
    host_rows_for_ratio,
    host_seqs_for_ratio,
    load_offloaded,
    model_config_from_source,
    offload_model,
)
from smemkit.offload.hf_checkpoint import SafetensorsCheckpoint  # noqa: E402
from smemkit.offload.hf_layout import TILE_ROWS, host_rows_at_least, op_of_linear  # noqa: E402
from smemkit.offload.hf_model import plan_layout  # noqa: E402
from smemkit.offload.pinned import TILE_ROWS as SPLIT_WEIGHT_TILE  # noqa: E402

COMMON = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, max_position_embeddings=128)
GQA = dict(intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32)
CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**COMMON, **GQA),
    "qwen3": lambda: transformers.Qwen3Config(**COMMON, **GQA, tie_word_embeddings=True),
    "qwen2": lambda: transformers.Qwen2Config(**COMMON, **GQA),
    "mistral": lambda: transformers.MistralConfig(**COMMON, **GQA),
    "opt": lambda: transformers.OPTConfig(**COMMON, ffn_dim=128, num_attention_heads=4,
                                          word_embed_proj_dim=64),
}
BATCH, PROMPT, NEW = 3, 6, 8
MAX_SEQ = PROMPT + NEW


def tiny(arch: str, seed: int = 0, dtype: torch.dtype = torch.bfloat16) -> nn.Module:
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(CONFIGS[arch](), dtype=dtype).eval()


def prompts(seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, COMMON["vocab_size"], (BATCH, PROMPT), generator=g)


def greedy(model: nn.Module, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                          do_sample=False, **kwargs)


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


# ---- planning from sources ----------------------------------------------------------------------

@pytest.mark.parametrize(("dtype", "size"), [(torch.float32, 4), (torch.bfloat16, 2), (torch.float16, 2)])
def test_plan_from_a_config_and_a_checkpoint_directory(tmp_path, dtype, size):
    model = tiny("llama", dtype=dtype)
    model.save_pretrained(tmp_path, safe_serialization=True)
    data = json.loads((tmp_path / "config.json").read_text())
    for source in (tmp_path, tmp_path / "config.json"):
        cfg = model_config_from_source(str(source))
        assert cfg == replace(config_from_hf(data, name=str(source)), dtype_bytes=size)
    ops = decode_ops(model_config_from_source(tmp_path), 2, 16)
    linear_bytes = sum(m.weight.numel() * size for m in model.modules() if isinstance(m, nn.Linear))
    assert sum(op.weight_bytes for op in ops if op.kind != "attention") == linear_bytes
    del data["dtype"]  # no dtype in config.json: the safetensors headers decide
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert model_config_from_source(tmp_path).dtype_bytes == size
    (tmp_path / "lone.json").write_text(json.dumps(data))
    assert model_config_from_source(tmp_path / "lone.json").dtype_bytes == 2  # no checkpoint beside it: bf16


def test_plan_sources_builtin_and_errors(tmp_path):
    assert model_config_from_source("llama-3-8b") == BUILTIN_MODELS["llama-3-8b"]
    with pytest.raises(InvalidArgumentError, match="no config.json"):
        model_config_from_source(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**CONFIGS["llama"]().to_dict(), "dtype": "int4"}))
    with pytest.raises(InvalidArgumentError, match="'dtype' is 'int4'; allowed"):
        model_config_from_source(tmp_path)


# ---- the checkpoint loader ----------------------------------------------------------------------

def write_shards(state: dict[str, torch.Tensor], directory, shards: int, index: bool) -> None:
    names = sorted(state)
    weight_map = {}
    for i in range(shards):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: state[n].contiguous() for n in names[i::shards]}
        safetensors_torch.save_file(part, str(directory / file))
        weight_map |= dict.fromkeys(part, file)
    if index:
        index_json = {"metadata": {}, "weight_map": weight_map}
        (directory / "model.safetensors.index.json").write_text(json.dumps(index_json))


class CountingCheckpoint:
    """Wraps the real reader: how often each tensor is read, and the most bytes read from the
    files that are alive at once (each read tensor is tracked until it is garbage)."""

    def __init__(self, inner: SafetensorsCheckpoint) -> None:
        self.inner, self.reads, self.live, self.peak = inner, Counter(), 0, 0

    def names(self) -> set[str]:
        return self.inner.names()

    def _release(self, nbytes: int) -> None:
        self.live -= nbytes

    def get(self, name: str) -> torch.Tensor:
        t = self.inner.get(name)
        self.reads[name] += 1
        nbytes = t.numel() * t.element_size()
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(t, self._release, nbytes)
        return t


@pytest.mark.parametrize(("arch", "layout"), [("llama", "single"), ("opt", "index"), ("qwen3", "glob"),
                                              ("mistral", "index")])
def test_loader_places_every_tensor_once_with_one_tensor_in_pageable_memory(tmp_path, arch, layout):
    ref = tiny(arch)
    state = {k: v.detach().clone() for k, v in ref.state_dict().items()}
    if layout == "single":
        ref.save_pretrained(tmp_path, safe_serialization=True)
    else:
        ref.config.save_pretrained(tmp_path)
        if ref.config.tie_word_embeddings:
            state.pop("lm_head.weight")
        write_shards(state, tmp_path, shards=3, index=layout == "index")
    with SafetensorsCheckpoint(tmp_path, prefix=ref.base_model_prefix) as reader:
        counting = CountingCheckpoint(reader)
        off = load_offloaded(tmp_path, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, placement=CpuPlacement(),
                             checkpoint=counting)
    assert max(counting.reads.values()) == 1
    read = set(counting.reads)
    saved = set(safetensors_names(tmp_path))
    tied_alias = {"lm_head.weight", "model.embed_tokens.weight", "model.decoder.embed_tokens.weight"}
    assert read <= saved and saved - read <= tied_alias  # a tied table is read once, under one name
    biggest = max(t.numel() * t.element_size() for t in state.values())
    biggest_bias = max(t.numel() * t.element_size() for n, t in state.items() if n.endswith(".bias")) \
        if any(n.endswith(".bias") for n in state) else 0
    assert counting.peak <= biggest + biggest_bias
    model = off.model
    for split in off.layout.linears:
        part = model.get_submodule(split.name).split_weight
        full = state.get(f"{split.name}.weight", state.get("model.embed_tokens.weight",
                                                           state.get("model.decoder.embed_tokens.weight")))
        n_hbm = split.out_features - host_rows_for_ratio(split.out_features, split.ratio)
        assert part.n_hbm == n_hbm
        assert torch.equal(part.hbm, full[:n_hbm]) and torch.equal(part.host, full[n_hbm:])
    for name, t in model.named_parameters():
        assert torch.equal(t, state[name]), name
    ids = prompts(5)
    want = greedy(ref, ids)
    assert torch.equal(off.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                                    min_new_tokens=NEW, do_sample=False), want)


def safetensors_names(directory) -> list[str]:
    from smemkit.offload.model_source import checkpoint_files, safetensors_header

    return [n for f in checkpoint_files(directory) for n in safetensors_header(f)]


def test_loader_converts_float32_checkpoints_and_checks_before_reading(tmp_path):
    ref = tiny("llama", dtype=torch.float32)
    ref.save_pretrained(tmp_path, safe_serialization=True)
    assert model_config_from_source(tmp_path).dtype_bytes == 4  # planned as stored
    with SafetensorsCheckpoint(tmp_path, prefix="model") as reader:
        counting = CountingCheckpoint(reader)
        with pytest.raises(OffloadFitError, match="pinned host memory"):
            load_offloaded(tmp_path, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, checkpoint=counting,
                           placement=CpuPlacement(pinned_bytes=0))
        assert not counting.reads  # refused before the first tensor was read
        off = load_offloaded(tmp_path, ratio=0.5, batch=BATCH, max_seq_len=MAX_SEQ, checkpoint=counting,
                             placement=CpuPlacement())
    assert off.layout.dtype == torch.bfloat16 and off.layout.dtype_bytes == 2  # loaded as bf16
    q = off.model.get_submodule("model.layers.0.self_attn.q_proj").split_weight
    assert q.hbm.dtype == torch.bfloat16
    assert torch.equal(q.to_dense(), ref.model.layers[0].self_attn.q_proj.weight.detach().to(torch.bfloat16))


def test_loader_errors(tmp_path):
    with pytest.raises(InvalidArgumentError, match="no config.json"):
        load_offloaded(tmp_path, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
    ref = tiny("llama")
    ref.config.save_pretrained(tmp_path)
    with pytest.raises(InvalidArgumentError, match="no \\*.safetensors file"):
        load_offloaded(tmp_path, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
    state = {k: v for k, v in ref.state_dict().items() if k != "model.norm.weight"}
    safetensors_torch.save_file({k: v.contiguous() for k, v in state.items()},
                                str(tmp_path / "model.safetensors"))
    with pytest.raises(InvalidArgumentError, match="no tensor for 1 parameter.*model.norm.weight"):
        load_offloaded(tmp_path, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
    index_json = {"weight_map": {"x": "gone.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index_json))
    with pytest.raises(InvalidArgumentError, match="gone.safetensors"):
        load_offloaded(tmp_path, ratio=0.1, batch=1, max_seq_len=8, placement=CpuPlacement())
