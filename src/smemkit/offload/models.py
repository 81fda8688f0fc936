"""Decoder-only LLMs as lists of ``Op``: bytes and FLOPs of one decode step at batch B, context L.

Only what a decode step streams every step is planned: per layer the QKV projection, attention
over the KV cache, the output projection and the MLP (gate/up/down, or OPT's fc1/fc2), plus the
LM head. A mixture-of-experts layer (Mixtral, Qwen3-MoE) has one ``experts`` op in place of the
MLP: all its experts' bytes are stored, but a step reads only the experts its ``batch`` tokens are
routed to (``read_fraction``, the expected share under uniform routing). Its router (E x hidden)
and the norms and biases (< 0.1 % of bytes) are left out. The input embedding table is read only
B rows per step, so it is taken to live in host memory and is not counted against the GPU budget;
when it is tied to the LM head (OPT) the LM head op carries those bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from smemkit.errors import InvalidArgumentError, check_int_range, is_int
from smemkit.inputs import existing_file, read_text
from smemkit.offload.costmodel import Op

# Bytes per weight and KV element by the names config.json uses (``torch_dtype``, or ``dtype`` in
# newer files). Without either the weights are taken as bfloat16, the common release format.
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
                  "bf16": "bfloat16"}
DEFAULT_DTYPE = "bfloat16"
# Sizes beyond these are no decoder anyone builds; the bounds keep every byte count a finite float.
MAX_DIM = 2**31 - 1
MAX_LAYERS = 100_000


def canonical_dtype(value: object, label: str) -> str:
    """A weight dtype as config.json spells it ("bfloat16", "torch.float16", "fp32") -> the key
    of DTYPE_BYTES; anything else is an InvalidArgumentError listing what is allowed."""
    text = str(value).lower().removeprefix("torch.") if isinstance(value, str) else None
    name = _DTYPE_ALIASES.get(text, text) if text is not None else None
    if name not in DTYPE_BYTES:
        raise InvalidArgumentError(f"{label} {value!r}: allowed are {', '.join(DTYPE_BYTES)} "
                                   f"(or {', '.join(_DTYPE_ALIASES)})")
    return name


@dataclass(frozen=True)
class ModelConfig:
    """The few architecture figures the cost model needs (HuggingFace config.json names)."""

    name: str
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    num_hidden_layers: int
    vocab_size: int
    head_dim: int
    gated_mlp: bool = True
    tie_word_embeddings: bool = False
    dtype: str = DEFAULT_DTYPE
    num_experts: int = 0  # experts per MoE layer (0: a dense MLP); intermediate_size is each expert's
    experts_per_token: int = 0

    def __post_init__(self) -> None:
        for label in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                      "vocab_size", "head_dim"):
            check_int_range(f"model '{self.name}': {label}", getattr(self, label), 1, MAX_DIM)
        check_int_range(f"model '{self.name}': num_hidden_layers", self.num_hidden_layers, 1, MAX_LAYERS)
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype, f"model '{self.name}': dtype"))
        if self.num_experts:
            check_int_range(f"model '{self.name}': num_experts", self.num_experts, 2, MAX_DIM)
            check_int_range(f"model '{self.name}': experts_per_token", self.experts_per_token, 1,
                            self.num_experts)
            if not self.gated_mlp:
                raise InvalidArgumentError(f"model '{self.name}': experts must be gated (gate_up_proj)")
        elif self.experts_per_token:
            raise InvalidArgumentError(f"model '{self.name}': experts_per_token without num_experts")
        if self.num_attention_heads % self.num_key_value_heads:
            raise InvalidArgumentError(
                f"model '{self.name}': num_attention_heads ({self.num_attention_heads}) must be a "
                f"multiple of num_key_value_heads ({self.num_key_value_heads})")

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def experts_read_fraction(self, tokens: int) -> float:
        """Expected share of a layer's experts that ``tokens`` tokens, each routed to
        ``experts_per_token`` distinct experts uniformly at random, read: ``1 - (1 - k/E)^tokens``."""
        return 1.0 - (1.0 - self.experts_per_token / self.num_experts) ** tokens


# Public config.json values (checked 2026-11):
# - meta-llama/Meta-Llama-3-8B and -70B config.json (also oumi configs/recipes/llama3_1/README.md):
#   8B hidden 4096, intermediate 14336, 32 layers, 32 heads, 8 KV heads, vocab 128256, untied;
#   70B hidden 8192, intermediate 28672, 80 layers, 64 heads, 8 KV heads, vocab 128256, untied.
# - facebook/opt-30b config.json (huggingface.co/facebook/opt-30b): hidden 7168, ffn_dim 28672,
#   48 layers, 56 heads (MHA), vocab 50272, relu MLP, LM head shares the embedding.
# - mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, intermediate 14336 per expert, 32 layers,
#   32 heads, 8 KV heads, vocab 32000, 8 local experts, 2 per token, untied.
BUILTIN_MODELS: dict[str, ModelConfig] = {
    "llama-3-8b": ModelConfig("llama-3-8b", 4096, 14336, 32, 8, 32, 128256, 128),
    "llama-3-70b": ModelConfig("llama-3-70b", 8192, 28672, 64, 8, 80, 128256, 128),
    "opt-30b": ModelConfig("opt-30b", 7168, 28672, 56, 56, 48, 50272, 128, gated_mlp=False,
                           tie_word_embeddings=True),
    "mixtral-8x7b": ModelConfig("mixtral-8x7b", 4096, 14336, 32, 8, 32, 32000, 128, num_experts=8,
                                experts_per_token=2),
}
# MoE model types whose experts module (gate_up_proj E x 2I x H, down_proj E x H x I, no shared
# experts) the offloader knows, and the config key of each expert's intermediate size
MOE_TYPES = {"mixtral": "intermediate_size", "qwen3_moe": "moe_intermediate_size"}

_UNGATED_TYPES = {"opt", "gpt2", "gpt_neox", "gptj", "falcon", "bloom", "phi"}


def config_from_hf(data: dict, name: str = "config.json") -> ModelConfig:
    """A ``ModelConfig`` from a HuggingFace config.json dict; the weights' dtype from its
    ``torch_dtype`` (or ``dtype``) field, bfloat16 when it has neither."""
    def need(*keys: str) -> int:
        for key in keys:
            if key in data:
                value = data[key]
                return check_int_range(f"{name}: '{key}'", value, 1,
                                       MAX_LAYERS if key == "num_hidden_layers" else MAX_DIM)
        raise InvalidArgumentError(f"{name}: missing '{keys[0]}' (a decoder-only HuggingFace "
                                   "config.json with hidden_size, intermediate_size or ffn_dim, "
                                   "num_attention_heads, num_hidden_layers and vocab_size is needed)")

    model_type = str(data.get("model_type", ""))
    experts = [k for k in ("num_local_experts", "num_experts", "n_routed_experts")
               if isinstance(data.get(k), int) and data[k] > 1]
    num_experts = per_token = 0
    intermediate_keys = ("intermediate_size", "ffn_dim")
    if experts:
        if model_type not in MOE_TYPES:
            raise InvalidArgumentError(
                f"{name}: a mixture-of-experts config ({experts[0]} = {data[experts[0]]}) of model_type "
                f"{model_type!r}; the MoE types supported are {', '.join(MOE_TYPES)}")
        if data.get("mlp_only_layers") or data.get("decoder_sparse_step", 1) != 1:
            raise InvalidArgumentError(f"{name}: dense layers between MoE layers (mlp_only_layers, "
                                       "decoder_sparse_step != 1) are not supported: every layer must be MoE")
        num_experts = need(experts[0])
        per_token = need("num_experts_per_tok")
        intermediate_keys = (MOE_TYPES[model_type],)
    hidden = need("hidden_size", "d_model")
    heads = need("num_attention_heads")
    if data.get("head_dim") is None and hidden % heads:
        raise InvalidArgumentError(f"{name}: hidden size {hidden} is not a multiple of "
                                   f"{heads} heads and no head_dim is given")
    head_dim = data.get("head_dim") or hidden // heads
    for key in ("num_key_value_heads", "head_dim"):
        if data.get(key) is not None and (not is_int(data[key]) or data[key] < 1):
            raise InvalidArgumentError(f"{name}: '{key}' must be a positive integer, got {data[key]!r}")
    tie = data.get("tie_word_embeddings", model_type == "opt")
    if not isinstance(tie, bool):
        raise InvalidArgumentError(f"{name}: 'tie_word_embeddings' must be true or false, got {tie!r}")
    dtype_key = "torch_dtype" if data.get("torch_dtype") is not None else "dtype"
    dtype = canonical_dtype(data.get(dtype_key) or DEFAULT_DTYPE, f"{name}: '{dtype_key}'")
    ungated = model_type in _UNGATED_TYPES or ("ffn_dim" in data and "intermediate_size" not in data)
    return ModelConfig(
        name=name,
        hidden_size=hidden,
        intermediate_size=need(*intermediate_keys),
        num_attention_heads=heads,
        num_key_value_heads=data.get("num_key_value_heads") or heads,
        num_hidden_layers=need("num_hidden_layers"),
        vocab_size=need("vocab_size"),
        head_dim=head_dim,
        gated_mlp=not ungated,
        tie_word_embeddings=tie,
        dtype=dtype,
        num_experts=num_experts,
        experts_per_token=per_token,
    )


def load_model(spec: str) -> ModelConfig:
    """A built-in model by name, or a HuggingFace config.json path."""
    key = spec.lower()
    if key in BUILTIN_MODELS:
        return BUILTIN_MODELS[key]
    path = existing_file(spec) or existing_file(Path(spec) / "config.json")
    if path is None:
        raise InvalidArgumentError(f"--model '{spec}' is neither a built-in model "
                                   f"({', '.join(BUILTIN_MODELS)}) nor a config.json file (or a folder "
                                   "holding one)")
    text = read_text(path, "model config")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"--model '{spec}': not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"--model '{spec}': expected a JSON object")
    return config_from_hf(data, name=str(path))


def decode_ops(cfg: ModelConfig, batch: int, seq: int) -> list[Op]:
    """The ops of one decode step: ``batch`` sequences, each attending over ``seq`` cached tokens.

    A linear layer of shape [n_in, n_out] holds ``n_in n_out`` weights and does ``2 B n_in n_out``
    FLOPs. Attention reads the layer's K and V (``2 B L kv_heads head_dim`` values) and does
    ``4 B L heads head_dim`` FLOPs (QK^T and PV). An experts op stores ``3 E hidden I`` weights and
    does ``2 B k 3 hidden I`` FLOPs (each token through its k experts).
    """
    for label, value in (("--batch", batch), ("--seq", seq)):
        check_int_range(label, value, 1, MAX_DIM)
    d = cfg.dtype_bytes
    h, hd = cfg.hidden_size, cfg.head_dim
    q_dim, kv_dim = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd

    def linear(name: str, n_in: int, n_out: int, layer: int | None) -> Op:
        label = name if layer is None else f"L{layer}.{name}"
        return Op(label, name, float(n_in * n_out * d), float(2 * batch * n_in * n_out), layer)

    ops: list[Op] = []
    for layer in range(cfg.num_hidden_layers):
        ops.append(linear("qkv_proj", h, q_dim + 2 * kv_dim, layer))
        ops.append(Op(f"L{layer}.attention", "attention", float(2 * batch * seq * kv_dim * d),
                      float(4 * batch * seq * q_dim), layer))
        ops.append(linear("o_proj", q_dim, h, layer))
        if cfg.is_moe:
            i = cfg.intermediate_size
            ops.append(Op(f"L{layer}.experts", "experts", float(cfg.num_experts * 3 * h * i * d),
                          float(2 * batch * cfg.experts_per_token * 3 * h * i), layer,
                          read_fraction=cfg.experts_read_fraction(batch)))
        elif cfg.gated_mlp:
            ops.append(linear("gate_proj", h, cfg.intermediate_size, layer))
            ops.append(linear("up_proj", h, cfg.intermediate_size, layer))
            ops.append(linear("down_proj", cfg.intermediate_size, h, layer))
        else:
            ops.append(linear("fc1", h, cfg.intermediate_size, layer))
            ops.append(linear("fc2", cfg.intermediate_size, h, layer))
    ops.append(linear("lm_head", h, cfg.vocab_size, None))
    return ops


def host_resident_bytes(cfg: ModelConfig) -> int:
    """Bytes of the untied input embedding table, kept in host memory outside the plan."""
    return 0 if cfg.tie_word_embeddings else cfg.vocab_size * cfg.hidden_size * cfg.dtype_bytes
