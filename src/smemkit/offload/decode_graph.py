"""Greedy decoding with one decode step (every layer, attention included) in one CUDA graph.

:func:`decode_engine` takes an :class:`~.hf_model.OffloadedModel` or a plain Hugging Face decoder
(the all-HBM reference every offload ratio is compared with) and returns a :class:`DecodeEngine`:
prefill runs eagerly, then one decode step is captured into a ``torch.cuda.CUDAGraph`` and
replayed once per token, with no Python and no host synchronisation between tokens.

What makes the step capturable:

- **A static cache** (:class:`StaticSplitCache`): K/V preallocated for ``batch`` x
  ``max_seq_len`` (an offloaded model's own split cache buffers: its HBM sequences on the device,
  its host sequences in pinned memory), written with ``index_copy_`` at a position held in a
  device tensor, never a Python int.
- **Host sequences read inside the graph**: each layer copies its host K/V (the whole
  ``max_seq_len``, a static size) from pinned memory into one device staging buffer shared by
  all layers (a pinned-to-device copy is capturable); the new token's K/V reaches host memory
  through a CUDA alias of the pinned buffer (a kernel write, since the position is a tensor).
  The staged copy moves ``max_seq_len`` tokens per host sequence whatever the current length:
  correct, and a cost the benchmark's host-bytes column reports.
- **Attention through transformers' own interface**: the engine registers
  ``"smemkit_static"`` with ``AttentionInterface`` and sets it on the model's config while it
  runs. The function runs ``scaled_dot_product_attention`` over the static K/V with a boolean mask
  ``key position <= query position`` built from the step's position tensor, GQA as grouped
  queries (query heads of one KV head stacked along the query axis: no K/V repeated). No model
  code is copied; transformers builds no mask for an implementation it has no mask function for.
- **The loop in the graph**: the step reads its input tokens from a device token history at the
  position tensor, writes the greedy token back one position on, and advances the position.

Capture that fails (an op that synchronises, a module reading host memory on the CPU) raises
:class:`DecodeGraphError` naming the cause; nothing falls back to eager silently
(``graph=False`` runs the same step eagerly, on purpose).
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.cache_utils import Cache, CacheLayerMixin

from smemkit.errors import InvalidArgumentError, SmemkitError
from smemkit.offload.hf_cache import BatchSplitCache

ATTENTION_NAME = "smemkit_static"
WARMUP_STEPS = 2  # eager runs on a side stream before capture: lazy kernel loads, cuBLAS handles, rings


class DecodeGraphError(SmemkitError, RuntimeError):
    """Capturing or replaying the decode step as a CUDA graph failed; the message names the cause."""


@dataclass
class StepState:
    """What one forward of the engine attends with: the positions it writes and the mask."""

    write_pos: torch.Tensor  # (q,) int64: cache positions of the q new tokens
    mask: torch.Tensor  # (q, max_seq_len) bool: key j visible to query i iff j <= write_pos[i]


_ACTIVE: contextvars.ContextVar[StaticSplitCache | None] = contextvars.ContextVar("smemkit_engine_cache",
                                                                                  default=None)


class StaticLayer(CacheLayerMixin):
    """One layer's static K/V: ``b_hbm`` sequences on the device, ``host_seqs`` in pinned memory.

    ``kv_host`` is (2, host_seqs, kv_heads, max_seq_len, head_dim) in host memory,
    ``kv_host_dev`` a device-addressable alias of it (CUDA alias of the pinned buffer on a GPU,
    the tensor itself on the CPU), ``staging`` a device buffer at least that large, shared by all
    layers."""

    is_compileable = False
    is_sliding = False

    def __init__(self, k_hbm: torch.Tensor, v_hbm: torch.Tensor, kv_host: torch.Tensor,
                 kv_host_dev: torch.Tensor, staging: torch.Tensor, cache: StaticSplitCache) -> None:
        super().__init__()
        self.k_hbm, self.v_hbm, self.kv_host, self.kv_host_dev = k_hbm, v_hbm, kv_host, kv_host_dev
        self.b_hbm, self.host_seqs = int(k_hbm.shape[0]), int(kv_host.shape[1])
        # the first numel of the shared buffer, so this layer's view is contiguous
        self.staging = staging.view(-1)[: kv_host.numel()].view(kv_host.shape)
        self._cache = cache
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to allocate: the storage is preallocated."""

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new tokens at the step's positions; stage the host sequences onto the device.
        Returns the HBM part (the engine's attention reads both parts itself)."""
        pos = self._cache.step.write_pos
        b = self.b_hbm
        with torch.no_grad():
            if b:
                self.k_hbm.index_copy_(2, pos, key_states[:b])
                self.v_hbm.index_copy_(2, pos, value_states[:b])
            if self.host_seqs:
                self.staging.copy_(self.kv_host, non_blocking=True)
                for i, states in enumerate((key_states, value_states)):
                    new = states[b:].to(self.staging.dtype)
                    self.staging[i].index_copy_(2, pos, new)
                    self.kv_host_dev[i].index_copy_(2, pos, new)
        return self.k_hbm, self.v_hbm

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.k_hbm.shape[2] if self.b_hbm else self.kv_host.shape[3], 0

    def get_seq_length(self) -> int:
        return self._cache.length

    def get_max_length(self) -> int:
        return self._cache.max_seq_len

    def reset(self) -> None:
        self._cache.length = 0


class StaticSplitCache(Cache):
    """A transformers ``Cache`` of :class:`StaticLayer`, one per decoder layer, and the step state
    every layer reads. ``length`` is the host's count of cached tokens (what transformers asks
    ``get_seq_length`` for); inside a graph the positions come from ``step`` instead."""

    def __init__(self, parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]],
                 max_seq_len: int, device: torch.device) -> None:
        self.max_seq_len = max_seq_len
        self.length = 0
        self.step = StepState(torch.zeros(1, dtype=torch.long, device=device),
                              torch.zeros(1, max_seq_len, dtype=torch.bool, device=device))
        largest = max(parts, key=lambda p: p[2].numel())[2]
        staging = torch.zeros(largest.shape, dtype=largest.dtype, device=device)
        layers = [StaticLayer(k, v, host, host_dev, staging, self) for k, v, host, host_dev in parts]
        super().__init__(layers=layers)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.layers[layer_idx].update(key_states, value_states)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def get_mask_sizes(self, query_length: int, layer_idx: int = 0) -> tuple[int, int]:
        return self.max_seq_len, 0

    def get_query_offset(self, layer_idx: int = 0) -> int:
        return self.length

    @property
    def host_bytes_per_step(self) -> int:
        """Host bytes one decode step moves for the KV cache: each layer's staged host part."""
        return sum(layer.kv_host.numel() * layer.kv_host.element_size() for layer in self.layers)

    @property
    def hbm_read_bytes(self) -> int:
        """K/V bytes in HBM the attention reads per step (the whole static length)."""
        return sum(2 * layer.k_hbm.numel() * layer.k_hbm.element_size() for layer in self.layers)


def _grouped_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
                  scaling: float | None) -> torch.Tensor:
    """SDPA of q (B, Hq, L, D) over k/v (B, Hkv, S, D), query head h reading KV head h // G: the
    G query heads of a KV head stacked along the query axis, so K/V are read once, not repeated."""
    b, hq, length, d = q.shape
    hkv = k.shape[1]
    groups = hq // hkv
    qg = q.reshape(b, hkv, groups * length, d)
    m = mask.repeat(groups, 1) if groups > 1 else mask
    out = F.scaled_dot_product_attention(qg, k, v, attn_mask=m, scale=scaling)
    return out.reshape(b, hq, length, d)


def static_attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                     **kwargs) -> tuple[torch.Tensor, None]:
    """The attention function registered as ``"smemkit_static"``: over the engine's static cache
    while an engine runs the model; transformers' SDPA attention otherwise (a model the engine
    changed still runs ``generate`` with any other cache)."""
    cache = _ACTIVE.get()
    if cache is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    layer = cache.layers[module.layer_idx]
    mask = cache.step.mask
    parts = []
    if layer.b_hbm:
        parts.append(_grouped_sdpa(query[: layer.b_hbm], layer.k_hbm, layer.v_hbm, mask, scaling))
    if layer.host_seqs:
        parts.append(_grouped_sdpa(query[layer.b_hbm:], layer.staging[0], layer.staging[1], mask, scaling))
    out = parts[0] if len(parts) == 1 else torch.cat(parts)
    return out.transpose(1, 2).contiguous(), None


def register_attention() -> None:
    """Register :func:`static_attention` with transformers (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, static_attention)


def _device_alias(placement, host: torch.Tensor) -> torch.Tensor:
    if host.numel() == 0:
        return host
    try:
        return placement.device_view(host)
    except Exception as exc:  # torch or the driver refused the alias
        raise DecodeGraphError(f"the decode engine writes new K/V of host sequences through a CUDA alias of "
                               f"their pinned memory, and making it failed: {exc}") from exc


def _forward_kwarg(model: nn.Module, *names: str) -> str | None:
    params = inspect.signature(model.forward).parameters
    return next((n for n in names if n in params), None)


class DecodeEngine:
    """Greedy decoding of ``batch`` sequences of up to ``max_seq_len`` tokens over a static cache.

    ``generate(input_ids, max_new_tokens, graph=True)`` prefills eagerly, captures one decode step
    (the first call with ``graph=True``; the graph is kept and replayed by later calls) and
    replays it per token. ``graph=False`` runs the same step eagerly (the comparison path; the
    only path on a CPU). ``step_times_ms`` holds the last call's per-step times (CUDA events)
    when ``generate(..., timed=True)``."""

    def __init__(self, model: nn.Module, cache: StaticSplitCache, batch: int, max_seq_len: int,
                 device: torch.device, vocab_size: int) -> None:
        self.model, self.cache, self.batch, self.max_seq_len = model, cache, batch, max_seq_len
        self.device, self.vocab_size = device, vocab_size
        self.history = torch.zeros(batch, max_seq_len + 1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)  # the decode step's input position
        self.input_ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.position_ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.logits = torch.zeros(batch, vocab_size, dtype=torch.float32, device=device)
        self._arange = torch.arange(max_seq_len, device=device)
        self._decode_mask = torch.zeros(1, max_seq_len, dtype=torch.bool, device=device)
        self._cache_kw = _forward_kwarg(model, "cache", "past_key_values")
        self._keep_kw = _forward_kwarg(model, "logits_to_keep", "num_logits_to_keep")
        self.graph: torch.cuda.CUDAGraph | None = None
        self.step_times_ms: list[float] = []
        self.capture_s: float | None = None
        register_attention()

    # ---- one forward ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        config = self.model.config
        previous = config._attn_implementation
        config._attn_implementation = ATTENTION_NAME
        token = _ACTIVE.set(self.cache)
        try:
            yield
        finally:
            _ACTIVE.reset(token)
            config._attn_implementation = previous

    def _logits(self, input_ids: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        kwargs = {self._cache_kw: self.cache, "use_cache": True, "position_ids": position_ids}
        if self._keep_kw:
            kwargs[self._keep_kw] = 1
        out = self.model(input_ids=input_ids, **kwargs)
        return out.logits[:, -1]

    def _step_body(self) -> None:
        """One decode step on device tensors only: read the tokens at ``pos``, run the model, write
        the greedy tokens at ``pos + 1``, advance ``pos``."""
        step = self.cache.step
        torch.index_select(self.history, 1, self.pos, out=self.input_ids)
        self.position_ids.copy_(self.pos.expand(self.batch, 1))
        step.write_pos = self.pos
        torch.le(self._arange.unsqueeze(0), self.pos.unsqueeze(1), out=self._decode_mask)
        step.mask = self._decode_mask
        logits = self._logits(self.input_ids, self.position_ids)
        self.logits.copy_(logits)
        nxt = logits.argmax(-1, keepdim=True)
        self.history.index_copy_(1, self.pos + 1, nxt)
        self.pos.add_(1)

    # ---- public --------------------------------------------------------------------------------
    def prefill(self, input_ids: torch.Tensor) -> None:
        """Run the prompt (B, L) eagerly into the cache; the first greedy token lands in ``history``."""
        if input_ids.dim() != 2 or input_ids.shape[0] != self.batch:
            raise InvalidArgumentError(f"input_ids must be (batch={self.batch}, prompt_len), got "
                                       f"{tuple(input_ids.shape)}")
        length = int(input_ids.shape[1])
        if not 1 <= length <= self.max_seq_len:
            raise InvalidArgumentError(f"prompt length {length} must be in [1, max_seq_len = "
                                       f"{self.max_seq_len}]")
        ids = input_ids.to(self.device, torch.long)
        positions = self._arange[:length]
        self.cache.step = StepState(positions, self._arange.unsqueeze(0) <= positions.unsqueeze(1))
        self.history.zero_()
        self.history[:, :length].copy_(ids)
        with torch.no_grad(), self._running():
            self.cache.length = 0
            logits = self._logits(ids, positions.unsqueeze(0).expand(self.batch, length).contiguous())
            self.logits.copy_(logits)
            self.history[:, length].copy_(logits.argmax(-1))
            self.cache.length = length
        self.pos.fill_(length)

    def capture(self) -> None:
        """Capture one decode step into a CUDA graph (after a prefill: the warm-up steps run on the
        prefilled cache and are undone, the position restored)."""
        if self.device.type != "cuda":
            raise DecodeGraphError(f"CUDA graphs need a CUDA device; the model runs on {self.device} "
                                   "(use graph=False)")
        import time

        start = time.perf_counter()
        saved = self.pos.clone()
        graph = torch.cuda.CUDAGraph()
        stage = "warm-up"
        try:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.no_grad(), self._running(), torch.cuda.stream(side):
                for _ in range(WARMUP_STEPS):
                    self._step_body()
                    self.pos.copy_(saved)
            torch.cuda.current_stream(self.device).wait_stream(side)
            torch.cuda.synchronize(self.device)
            stage = "capture"
            with torch.no_grad(), self._running(), torch.cuda.graph(graph):
                self._step_body()
            self.pos.copy_(saved)
            torch.cuda.synchronize(self.device)
        except Exception as exc:
            raise DecodeGraphError(
                f"capturing the decode step as a CUDA graph failed at {stage}: {type(exc).__name__}: {exc}. "
                "Something in the model's step synchronises with the host or reads host memory on the "
                "CPU; run generate(..., graph=False) for the eager engine") from exc
        self.graph = graph
        self.capture_s = time.perf_counter() - start

    def decode(self, steps: int, *, graph: bool = True, timed: bool = False,
               on_step: Callable[[int], None] | None = None, keep_logits: bool = False,
               forced: torch.Tensor | None = None) -> list[torch.Tensor]:
        """``steps`` decode steps after :meth:`prefill`; per-step times (ms) into ``step_times_ms``
        when ``timed``; the float32 logits of each step returned when ``keep_logits``. ``forced``
        (B, steps) teacher-forces: step i's greedy token is replaced by ``forced[:, i]`` before the
        next step reads it, so two models can be compared on the same inputs at every step."""
        start = int(self.pos.item())
        if start + steps > self.max_seq_len:
            raise InvalidArgumentError(f"{start} cached + {steps} decode steps exceed max_seq_len = "
                                       f"{self.max_seq_len}")
        if forced is not None and (forced.dim() != 2 or tuple(forced.shape) != (self.batch, steps)):
            raise InvalidArgumentError(f"forced must be (batch={self.batch}, steps={steps}) token ids, got "
                                       f"{tuple(forced.shape)}")
        if forced is not None:
            forced = forced.to(self.device, torch.long)
        if graph and self.graph is None:
            self.capture()
        self.step_times_ms = []
        kept: list[torch.Tensor] = []
        events = None
        if timed and self.device.type == "cuda":
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(steps)]
        for i in range(steps):
            if events:
                events[i][0].record()
            if graph:
                self.graph.replay()
            else:
                self.cache.length = start + i
                with torch.no_grad(), self._running():
                    self._step_body()
            if events:
                events[i][1].record()
            if forced is not None:
                self.history[:, start + i + 1].copy_(forced[:, i])
            if keep_logits:
                kept.append(self.logits.clone())
            if on_step is not None:
                on_step(i)
        self.cache.length = start + steps
        if events:
            torch.cuda.synchronize(self.device)
            self.step_times_ms = [a.elapsed_time(b) for a, b in events]
        return kept

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, *, graph: bool = True,
                 keep_logits: bool = False) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Greedy tokens: (B, L + max_new_tokens), the prompt first, as ``model.generate`` returns
        them. With ``keep_logits``, also each new token's float32 logits (B, vocab)."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InvalidArgumentError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        length = int(input_ids.shape[1]) if input_ids.dim() == 2 else 0
        if length + max_new_tokens - 1 > self.max_seq_len:
            raise InvalidArgumentError(f"prompt {length} + {max_new_tokens} new tokens need "
                                       f"{length + max_new_tokens - 1} cached positions; the cache holds "
                                       f"max_seq_len = {self.max_seq_len}")
        self.prefill(input_ids)
        first = self.logits.clone() if keep_logits else None
        kept = self.decode(max_new_tokens - 1, graph=graph, keep_logits=keep_logits)
        tokens = self.history[:, : length + max_new_tokens].clone()
        return (tokens, [first, *kept]) if keep_logits else tokens


def _text_config(model: nn.Module):
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _check_plain(model: nn.Module) -> None:
    from smemkit.offload.hf_layout import SUPPORTED_MODEL_TYPES

    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in SUPPORTED_MODEL_TYPES:
        raise InvalidArgumentError(f"model must be a Hugging Face decoder of type "
                                   f"{', '.join(SUPPORTED_MODEL_TYPES)}, got {type(model).__name__} "
                                   f"({kind!r})")


def decode_engine(model, *, batch: int | None = None, max_seq_len: int | None = None) -> DecodeEngine:
    """A :class:`DecodeEngine` for an :class:`~.hf_model.OffloadedModel` (its own split cache
    buffers, batch and context) or a plain Hugging Face decoder already on its device (``batch``
    and ``max_seq_len`` required; the K/V cache allocated wholly on that device)."""
    # an OffloadedModel (hf_model, which imports this module) is known by its split cache
    if isinstance(getattr(model, "kv_cache", None), BatchSplitCache):
        layers = model.kv_cache.layers
        batch_, seq = layers[0].split.batch, layers[0].split.max_seq_len
        for label, given, planned in (("batch", batch, batch_), ("max_seq_len", max_seq_len, seq)):
            if given is not None and given != planned:
                raise InvalidArgumentError(f"{label}={given}: the offloaded model was planned for {planned}")
        device = model.placement.device
        parts = []
        for layer in layers:
            for t in (layer.k_hbm, layer.v_hbm, layer.kv_host):
                t.zero_()  # unused positions are masked, but NaN bytes would still poison SDPA's sums
            alias = _device_alias(model.placement, layer.kv_host)
            parts.append((layer.k_hbm, layer.v_hbm, layer.kv_host, alias))
        cache = StaticSplitCache(parts, seq, device)
        _check_mistral_window(model.model, seq)
        return DecodeEngine(model.model, cache, batch_, seq, device, _text_config(model.model).vocab_size)
    _check_plain(model)
    for label, value in (("batch", batch), ("max_seq_len", max_seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{label} must be a positive integer for a plain model, got {value!r}")
    weight = next(model.parameters())
    device, dtype = weight.device, weight.dtype
    cfg = _text_config(model)
    heads = cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    parts = []
    for _ in range(cfg.num_hidden_layers):
        k = torch.zeros(batch, kv_heads, max_seq_len, head_dim, dtype=dtype, device=device)
        v = torch.zeros_like(k)
        empty = torch.zeros(2, 0, kv_heads, max_seq_len, head_dim, dtype=dtype, device=device)
        parts.append((k, v, empty, empty))
    _check_mistral_window(model, max_seq_len)
    return DecodeEngine(model, StaticSplitCache(parts, max_seq_len, device), batch, max_seq_len, device,
                        cfg.vocab_size)


def _check_mistral_window(model: nn.Module, max_seq_len: int) -> None:
    cfg = _text_config(model)
    window = getattr(cfg, "sliding_window", None)
    if window is not None and getattr(cfg, "use_sliding_window", True) and window < max_seq_len:
        raise InvalidArgumentError(f"the model attends within a sliding window of {window} tokens, shorter "
                                   f"than max_seq_len = {max_seq_len}; the engine masks full causal")
