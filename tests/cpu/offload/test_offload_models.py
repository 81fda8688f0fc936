"""Model descriptions: built-in configs, HuggingFace config.json parsing, per-op bytes and FLOPs."""

import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.offload import BUILTIN_MODELS, config_from_hf, decode_ops, load_model
from smemkit.offload.models import host_resident_bytes

LLAMA3_8B_JSON = {  # meta-llama/Meta-Llama-3-8B config.json, the fields that matter here
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256, "tie_word_embeddings": False,
}
OPT_30B_JSON = {  # facebook/opt-30b config.json
    "model_type": "opt", "hidden_size": 7168, "ffn_dim": 28672, "num_attention_heads": 56,
    "num_hidden_layers": 48, "vocab_size": 50272, "word_embed_proj_dim": 7168,
}


def parameter_count(name: str) -> int:
    cfg = BUILTIN_MODELS[name]
    ops = decode_ops(cfg, 1, 1)
    weights = sum(op.weight_bytes for op in ops if op.kind != "attention")
    return int(weights + host_resident_bytes(cfg)) // cfg.dtype_bytes


def test_builtin_parameter_counts_match_published_totals_less_norms():
    # Published totals 8,030,261,248 and 70,553,706,496 include RMSNorm weights (2 per layer + 1).
    assert parameter_count("llama-3-8b") == 8_030_261_248 - (2 * 32 + 1) * 4096
    assert parameter_count("llama-3-70b") == 70_553_706_496 - (2 * 80 + 1) * 8192
    assert 29.9e9 < parameter_count("opt-30b") < 30.0e9  # ~30 B; biases and positions left out


def test_hf_configs_give_the_builtins():
    assert config_from_hf(LLAMA3_8B_JSON, "llama-3-8b") == BUILTIN_MODELS["llama-3-8b"]
    assert config_from_hf(OPT_30B_JSON, "opt-30b") == BUILTIN_MODELS["opt-30b"]


def test_kv_cache_and_attention_flops_per_layer():
    cfg = BUILTIN_MODELS["llama-3-70b"]
    attn = [op for op in decode_ops(cfg, 8, 2048) if op.kind == "attention"]
    assert len(attn) == 80
    assert attn[0].weight_bytes == 2 * 8 * 2048 * 8 * 128 * 2
    assert attn[0].flops == 4 * 8 * 2048 * 64 * 128


def test_op_lists_per_architecture():
    kinds = {op.kind for op in decode_ops(BUILTIN_MODELS["opt-30b"], 2, 16)}
    assert kinds == {"qkv_proj", "attention", "o_proj", "fc1", "fc2", "lm_head"}
    ops = decode_ops(BUILTIN_MODELS["llama-3-8b"], 4, 16)
    qkv = next(op for op in ops if op.kind == "qkv_proj")
    assert qkv.weight_bytes == 4096 * (4096 + 2 * 1024) * 2 and qkv.flops == 2 * 4 * 4096 * 6144
    assert len(ops) == 32 * 6 + 1


def test_head_dim_field_wins_over_hidden_over_heads():
    cfg = config_from_hf({**LLAMA3_8B_JSON, "head_dim": 256})
    assert cfg.head_dim == 256


def test_load_model_from_file_and_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(OPT_30B_JSON))
    assert load_model(str(tmp_path / "config.json")).hidden_size == 7168
    assert not load_model(str(tmp_path)).gated_mlp
    assert load_model("LLaMA-3-70B") is BUILTIN_MODELS["llama-3-70b"]


@pytest.mark.parametrize("data,word", [
    ({k: v for k, v in LLAMA3_8B_JSON.items() if k != "vocab_size"}, "vocab_size"),
    ({**LLAMA3_8B_JSON, "num_key_value_heads": 5}, "multiple of num_key_value_heads"),
    ({**LLAMA3_8B_JSON, "num_hidden_layers": 0}, "num_hidden_layers"),
])
def test_bad_configs_name_the_field(data, word):
    with pytest.raises(InvalidArgumentError, match=word):
        config_from_hf(data)


def test_bad_model_spec_and_shapes(tmp_path):
    with pytest.raises(InvalidArgumentError, match="built-in model"):
        load_model("gpt-5")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        load_model(str(tmp_path / "bad.json"))
    with pytest.raises(InvalidArgumentError, match="--batch"):
        decode_ops(BUILTIN_MODELS["opt-30b"], 0, 16)
    with pytest.raises(InvalidArgumentError, match="--seq"):
        decode_ops(BUILTIN_MODELS["opt-30b"], 1, -3)
