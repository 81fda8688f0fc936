"""Tiny random Hugging Face decoders for the offload tests (built with ``from_config``, no downloads)."""

from __future__ import annotations

import torch
import transformers
from torch import nn

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
