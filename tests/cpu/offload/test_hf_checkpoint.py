"""Planning from model sources and loading offloaded models from safetensors checkpoints, on the CPU.

Checkpoints are written here from tiny random models (``save_pretrained``, or sharded by hand with
and without an index). The loader runs with ``CpuPlacement`` and a reader that counts reads and
the bytes read from the files that are alive at once, so the tests check that every tensor is
read once, that pageable memory holds about one tensor, that each row lands in its part, and
that the loaded model generates what the saved one does.
"""

from __future__ import annotations

import json
import weakref
from collections import Counter
from dataclasses import replace

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from hf_tiny_models import BATCH, CONFIGS, MAX_SEQ, NEW, greedy, prompts, tiny  # noqa: E402

from smemkit.errors import InvalidArgumentError  # noqa: E402
from smemkit.offload import (  # noqa: E402
    BUILTIN_MODELS,
    CpuPlacement,
    OffloadFitError,
    config_from_hf,
    decode_ops,
    host_rows_for_ratio,
    load_offloaded,
    model_config_from_source,
)
from smemkit.offload.hf_checkpoint import SafetensorsCheckpoint  # noqa: E402
from smemkit.offload.model_source import checkpoint_files, safetensors_header  # noqa: E402

# ---- planning from sources ----------------------------------------------------------------------

@pytest.mark.parametrize(("dtype", "size"), [(torch.float32, 4), (torch.bfloat16, 2), (torch.float16, 2)])
def test_plan_from_a_config_and_a_checkpoint_directory(tmp_path, dtype, size):
    model = tiny("llama", dtype=dtype)
    model.save_pretrained(tmp_path, safe_serialization=True)
    data = json.loads((tmp_path / "config.json").read_text())
    for source in (tmp_path, tmp_path / "config.json"):
        cfg = model_config_from_source(str(source))
        assert cfg == replace(config_from_hf(data, name=str(source)))
        assert cfg.dtype_bytes == size and cfg.dtype == str(dtype).removeprefix("torch.")
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
    with pytest.raises(InvalidArgumentError, match="'dtype' 'int4': allowed are"):
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
