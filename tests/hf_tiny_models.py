"""Tiny random Hugging Face decoders for the offload tests (built with ``from_config``, no downloads)."""

from __future__ import annotations

import torch
import transformers
from torch import nn

FOUR_ARCHS = ("llama", "mistral", "opt", "qwen3")
MOE_ARCHS = ("mixtral", "qwen3_moe")  # 4 experts, 2 per token


def tiny_configs(*, vocab_size: int = 256, intermediate_size: int = 128,
                 max_position_embeddings: int = 128,
                 archs: tuple[str, ...] = ("llama", "mistral", "opt", "qwen2", "qwen3")) -> dict:
    """arch -> a function making its 2-layer, 64-wide config (GQA: 4 query heads, 2 KV heads, head
    dim 32) at these sizes; each test module picks the sizes it was written for."""
    common = dict(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2,
                  max_position_embeddings=max_position_embeddings)
    gqa = dict(intermediate_size=intermediate_size, num_attention_heads=4, num_key_value_heads=2,
               head_dim=32)
    makers = {
        "llama": lambda: transformers.LlamaConfig(**common, **gqa),
        "qwen3": lambda: transformers.Qwen3Config(**common, **gqa, tie_word_embeddings=True),
        "qwen2": lambda: transformers.Qwen2Config(**common, **gqa),
        "mistral": lambda: transformers.MistralConfig(**common, **gqa),
        "opt": lambda: transformers.OPTConfig(**common, ffn_dim=intermediate_size, num_attention_heads=4,
                                              word_embed_proj_dim=64),
        "mixtral": lambda: transformers.MixtralConfig(**common, **gqa, num_local_experts=4,
                                                      num_experts_per_tok=2),
        "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
            **common, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
            moe_intermediate_size=intermediate_size, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]),
    }
    return {arch: makers[arch] for arch in archs}


# the CPU offload tests' sizes
COMMON = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, max_position_embeddings=128)
CONFIGS = tiny_configs()
MOE_CONFIGS = tiny_configs(archs=MOE_ARCHS)
BATCH, PROMPT, NEW = 3, 6, 8
MAX_SEQ = PROMPT + NEW


def tiny(arch: str, seed: int = 0, dtype: torch.dtype = torch.bfloat16,
         configs: dict | None = None) -> nn.Module:
    """A random model of ``arch`` from ``configs`` (default :data:`CONFIGS`), seeded."""
    torch.manual_seed(seed)
    config = (CONFIGS if configs is None else configs)[arch]()
    # MoE references run transformers' eager experts: the loop OffloadedExperts' CPU stand-in
    # computes (the default grouped_mm sums in another order)
    extra = {"experts_implementation": "eager"} if arch in MOE_ARCHS else {}
    return transformers.AutoModelForCausalLM.from_config(config, dtype=dtype, **extra).eval()


def prompts(seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, COMMON["vocab_size"], (BATCH, PROMPT), generator=g)


def greedy(model: nn.Module, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, min_new_tokens=NEW,
                          do_sample=False, **kwargs)
