"""A transformers ``Cache`` whose layers split their K/V along the batch: HBM and pinned host memory.

Each layer holds ``batch`` sequences of up to ``max_seq_len`` tokens, preallocated (the planner
counted these bytes): sequences ``[0, b_hbm)`` on the device, the last ``host_seqs`` in host
memory, in ``SplitKVCache``'s layout (K and V of the host sequences in one allocation,
(2, host_seqs, kv_heads, max_seq_len, head_dim)), so the split decode attention kernel can read
it in place once it is wired into the attention.

**Correct, not fast:** Hugging Face's attention takes whole K/V tensors from ``Cache.update``, so
each update writes the new tokens into both parts and returns K/V gathered onto the device, the
host sequences copied over the host link at every layer and step. The bytes at rest follow the
plan; the traffic does not yet. Pass it to ``generate`` as ``past_key_values=`` (or through
``OffloadedModel.generate``); beam search and ``num_return_sequences > 1`` (which reorder or
repeat sequences across the split) are refused.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from smemkit.errors import InvalidArgumentError
from smemkit.offload.hf_layout import CacheSplit
from smemkit.offload.placement import Placement


class BatchSplitLayer(CacheLayerMixin):
    """One decoder layer's K/V, split by sequences between the device and host memory."""

    is_compileable = False
    is_sliding = False
    is_croppable = True

    def __init__(self, split: CacheSplit, dtype: torch.dtype, placement: Placement) -> None:
        super().__init__()
        self.split = split
        self.batch_size = split.batch
        self.b_hbm = split.batch - split.host_seqs
        heads, length, dim = split.kv_heads, split.max_seq_len, split.head_dim
        self.k_hbm = placement.hbm_empty((self.b_hbm, heads, length, dim), dtype)
        self.v_hbm = placement.hbm_empty((self.b_hbm, heads, length, dim), dtype)
        both = placement.pinned_empty((2, split.host_seqs, heads, length, dim), dtype)
        self.kv_host = both  # one allocation: the decode engine stages and aliases it whole
        self.k_host, self.v_host = both[0], both[1]
        self.dtype, self.device = dtype, placement.device
        self.length = 0
        self.is_initialized = True  # storage is preallocated: generate's lazy initialisation is skipped

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to allocate: the parts were sized by the plan."""

    def _check(self, key_states: torch.Tensor, value_states: torch.Tensor) -> int:
        s = self.split
        want = (s.batch, s.kv_heads, None, s.head_dim)
        for name, t in (("key_states", key_states), ("value_states", value_states)):
            if t.dim() != 4 or any(w is not None and g != w for g, w in zip(t.shape, want, strict=True)):
                raise InvalidArgumentError(
                    f"layer {s.layer}: {name} has shape {tuple(t.shape)}; the split KV cache was planned "
                    f"for batch {s.batch}, {s.kv_heads} KV heads of dim {s.head_dim} (plan with the "
                    "batch you generate with; beam search and num_return_sequences > 1 multiply it and are "
                    "not supported)")
        new = int(key_states.shape[2])
        if self.length + new > s.max_seq_len:
            raise InvalidArgumentError(
                f"layer {s.layer}: {self.length} cached + {new} new tokens exceed max_seq_len = "
                f"{s.max_seq_len} the cache was planned for")
        return new

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new tokens of every sequence into its part; return K/V of all cached tokens,
        gathered onto the device, (batch, kv_heads, tokens, head_dim)."""
        new = self._check(key_states, value_states)
        start, stop, b = self.length, self.length + new, self.b_hbm
        with torch.no_grad():
            parts = ((self.k_hbm, self.k_host, key_states), (self.v_hbm, self.v_host, value_states))
            for hbm, host, states in parts:
                hbm[:, :, start:stop].copy_(states[:b])
                if self.split.host_seqs:
                    host[:, :, start:stop].copy_(states[b:])
        self.length = stop
        return self._gathered(self.k_hbm, self.k_host), self._gathered(self.v_hbm, self.v_host)

    def _gathered(self, hbm: torch.Tensor, host: torch.Tensor) -> torch.Tensor:
        if not self.split.host_seqs:
            return hbm[:, :, : self.length]
        return torch.cat([hbm[:, :, : self.length], host[:, :, : self.length].to(self.device)])

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """(kv_length, kv_offset) of the mask for ``query_length`` new tokens: every cached token."""
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return self.split.max_seq_len

    def reset(self) -> None:
        """Forget every cached token (the memory stays allocated)."""
        self.length = 0

    def crop(self, tokens_to_remove: int) -> None:
        """Drop tokens from the end: ``-n`` removes ``n``; a positive value keeps that many
        (transformers' older meaning)."""
        if tokens_to_remove < 0:
            self.length = max(0, self.length + tokens_to_remove)
        elif tokens_to_remove > 0:
            self.length = min(self.length, tokens_to_remove)

    def offload(self) -> None:
        raise InvalidArgumentError("the split KV cache places its sequences itself; transformers' "
                                   "layer offloading (cache_implementation='offloaded') does not apply")

    def prefetch(self) -> None:
        self.offload()

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        raise InvalidArgumentError("beam search is not supported with the split KV cache: reordering "
                                   "sequences would move them across the HBM/host split; use num_beams=1")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise InvalidArgumentError("num_return_sequences > 1 is not supported with the split KV cache: plan "
                                   "the batch you generate (repeat the prompts instead)")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise InvalidArgumentError("selecting sequences is not supported with the split KV cache")


class BatchSplitCache(Cache):
    """A ``Cache`` of :class:`BatchSplitLayer`, one per decoder layer, in layer order."""

    def __init__(self, layers: list[BatchSplitLayer]) -> None:
        super().__init__(layers=layers)

    @classmethod
    def from_splits(cls, splits: tuple[CacheSplit, ...], dtype: torch.dtype,
                    placement: Placement) -> BatchSplitCache:
        ordered = sorted(splits, key=lambda s: s.layer)
        if [s.layer for s in ordered] != list(range(len(ordered))):
            raise InvalidArgumentError(f"cache splits must cover layers 0..{len(ordered) - 1} once each")
        return cls([BatchSplitLayer(s, dtype, placement) for s in ordered])

    @property
    def host_seqs(self) -> list[int]:
        """Sequences in host memory, per layer."""
        return [layer.split.host_seqs for layer in self.layers]

    @property
    def hbm_bytes(self) -> int:
        return sum(2 * layer.k_hbm.numel() * layer.k_hbm.element_size() for layer in self.layers)

    @property
    def pinned_bytes(self) -> int:
        return sum(2 * layer.k_host.numel() * layer.k_host.element_size() for layer in self.layers)
