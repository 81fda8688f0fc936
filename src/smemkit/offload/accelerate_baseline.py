"""The baseline users run today: Hugging Face accelerate's CPU offload through ``dispatch_model``.

:func:`accelerate_offload` puts the last ``round(share x layers)`` decoder layers on the CPU
(accelerate streams their weights to the GPU at every forward; the rest stays on the GPU) with a
device map, as ``device_map="auto"`` under a memory cap would; :func:`decode_accelerate` decodes
greedily with transformers' own ``DynamicCache`` and times each step (host clock after a device
synchronisation: accelerate's hooks synchronise anyway).
"""

from __future__ import annotations

import inspect
import time

from smemkit.errors import InvalidArgumentError


def _layers_path(model) -> tuple[str, int]:
    for prefix in ("model.layers", "model.decoder.layers"):
        try:
            layers = model.get_submodule(prefix)
        except AttributeError:
            continue
        return prefix, len(layers)
    raise InvalidArgumentError(f"{type(model).__name__}: no model.layers or model.decoder.layers to offload")


def accelerate_offload(model, share: float):
    """Dispatch ``model`` (on cuda:0) with its last ``round(share x n_layers)`` layers on the CPU.
    Returns the dispatched model and how many layers went to the CPU."""
    from accelerate import dispatch_model

    if not 0 <= share <= 1:
        raise InvalidArgumentError(f"share must be in [0, 1], got {share}")
    prefix, n = _layers_path(model)
    on_cpu = round(share * n)
    device_map: dict[str, object] = {}
    for i in range(n):
        device_map[f"{prefix}.{i}"] = "cpu" if i >= n - on_cpu else 0
    # every other top-level piece of the base model and the head stay on the GPU
    base = prefix.rsplit(".", 1)[0]
    for name, _ in model.get_submodule(base).named_children():
        full = f"{base}.{name}"
        if full != prefix:
            device_map[full] = 0
    for name, _ in model.named_children():
        if name != base.split(".")[0]:
            device_map[name] = 0
    for i in range(n - on_cpu, n):
        model.get_submodule(f"{prefix}.{i}").to("cpu")
    return dispatch_model(model, device_map=device_map, main_device=0), on_cpu


def decode_accelerate(model, prompt, steps: int) -> dict:
    """Prefill ``prompt`` then ``steps`` greedy decode steps; per-step times (ms) and their stats."""
    import torch
    from transformers import DynamicCache

    from smemkit.offload.e2e import tpot_stats

    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    cache = DynamicCache(config=model.config)
    times = []
    with torch.no_grad():
        out = model(input_ids=prompt, use_cache=True, **{cache_kw: cache})
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens = [tok]
        for _ in range(steps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = model(input_ids=tok, use_cache=True, **{cache_kw: cache})
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
            tokens.append(tok)
    return {**tpot_stats(times), "tokens": torch.cat(tokens, 1).cpu()}
