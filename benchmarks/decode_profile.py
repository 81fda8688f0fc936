"""Where the all-HBM decode step's time goes: kernel times of one step by kernel, from the profiler.

The Llama-3-8B shape (random bf16 weights), batch 8, a static 1K cache, prompt 990 tokens. The
engine's step is replayed as a CUDA graph and timed (CUDA events, median of ``--steps``); the same
step is then run eagerly under ``torch.profiler`` for ``--profiled`` steps, and every CUDA kernel's
time is summed per kernel name and per class (GEMM, attention, the rest): what the step's time
over the HBM floor is made of. Kernel time summed over a graph-free step also shows launch gaps:
graph step time minus summed kernel time is what the GPU spends between kernels.

Run: ``python benchmarks/decode_profile.py --out benchmarks/results/h200/decode_profile.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

BATCH, CONTEXT, PROMPT = 8, 1024, 990


def kernel_class(name: str) -> str:
    low = name.lower()
    if any(s in low for s in ("gemm", "gemv", "cutlass", "sm90_xmma", "cublas", "nvjet", "splitk")):
        return "gemm"
    if any(s in low for s in ("flash", "fmha", "attention", "sdpa", "efficient")):
        return "attention"
    return "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/h200/decode_profile.json"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--profiled", type=int, default=3)
    parser.add_argument("--model", default="llama3-8b")
    args = parser.parse_args(argv)

    import torch
    from offload_e2e import SEED, model_config

    from smemkit.hw.environment import device_block, provenance
    from smemkit.offload import decode_engine
    from smemkit.offload.e2e import linear_weight_bytes, measure_hbm_rate, random_model, tpot_stats
    from smemkit.runtime.device import require_gpu

    require_gpu()
    started = time.time()
    hbm_rate = measure_hbm_rate()
    config = model_config(args.model)
    model = random_model(config, seed=SEED, device="cuda")
    weight = linear_weight_bytes(model)
    kv = 2 * config.num_hidden_layers * BATCH * config.num_key_value_heads * CONTEXT * 128 * 2
    floor_ms = (weight + kv) / hbm_rate * 1e3
    engine = decode_engine(model, batch=BATCH, max_seq_len=CONTEXT)
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (BATCH, PROMPT), generator=g).cuda()
    engine.prefill(prompt)
    engine.capture()
    engine.decode(args.steps, graph=True, timed=True)
    graph = tpot_stats(engine.step_times_ms[3:])
    engine.prefill(prompt)
    engine.decode(2, graph=False)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        engine.decode(args.profiled, graph=False)
        torch.cuda.synchronize()
    per_kernel: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            entry = per_kernel[ev.name]
            entry[0] += ev.device_time_total / 1e3 / args.profiled  # us -> ms, per step
            entry[1] += 1 / args.profiled
    classes: dict[str, float] = defaultdict(float)
    for name, (ms, _) in per_kernel.items():
        classes[kernel_class(name)] += ms
    kernels = sorted(({"name": n[:160], "class": kernel_class(n), "ms_per_step": ms, "launches_per_step": c}
                      for n, (ms, c) in per_kernel.items()), key=lambda r: -r["ms_per_step"])
    total = sum(classes.values())
    gemm_rate = weight / (classes["gemm"] * 1e-3) if classes["gemm"] else None
    result = {
        "model": args.model, "batch": BATCH, "context": CONTEXT, "hbm_bytes_per_s": hbm_rate,
        "weight_bytes": weight, "kv_bytes": kv, "hbm_floor_ms": floor_ms, "graph_step": graph,
        "kernel_ms_per_step": total, "by_class_ms": dict(classes),
        "launches_per_step": sum(c for _, c in per_kernel.values()),
        "gemm_bytes_per_s": gemm_rate, "kernels": kernels[:40],
    }
    device = device_block()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = {"provenance": provenance(device), "device": device, **result}
    args.out.write_text(json.dumps(body, indent=1) + "\n")
    for k in kernels[:15]:
        print(f"{k['ms_per_step']:7.3f} ms x{k['launches_per_step']:6.1f} {k['class']:9s} {k['name'][:90]}")
    print(f"graph step {graph['median_ms']:.2f} ms, floor {floor_ms:.2f} ms; kernels {total:.2f} ms/step "
          f"({', '.join(f'{c} {v:.2f}' for c, v in classes.items())}); "
          f"{result['launches_per_step']:.0f} launches; "
          f"GEMMs at {gemm_rate / 1e12 if gemm_rate else 0:.2f} TB/s; {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
