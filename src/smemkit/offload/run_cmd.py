"""``smemkit offload run``: build a model offloaded, decode greedily with the graph engine, report TPOT.

The model comes from ``--model``: a checkpoint directory is loaded with ``load_offloaded``; a
built-in name or a config.json gets random bf16 weights built in place on the GPU (seeded) and
is then offloaded with ``offload_model``. Random prompt tokens (seeded) are prefilled eagerly,
then ``--gen`` tokens decoded with one CUDA graph per step. Reported: TPOT median and p90 (CUDA
events), tokens/s, the effective bandwidth (weight + KV bytes per step / TPOT), the host-link
floor (host bytes per step / B_h, B_h measured here by a 1 GiB pinned-to-device copy), HBM and
pinned bytes. ``--host-path`` picks how the linears read their host rows (``offload_model``'s
``host_path``: prefetch, the default, or direct). ``--compare hbm`` runs the all-HBM engine on the
same weights (built again from the seed); ``--compare accelerate`` HF accelerate's CPU offload of
the same share of layers; ``--compare uva,prefetch`` the UVA zero-copy and layer-prefetch
baselines (``smemkit.offload.baselines``) on the same host rows of the same weights, with the KV
cache in HBM.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rich.console import Console

from smemkit.errors import InvalidArgumentError

COMPARE = ("hbm", "accelerate", "uva", "prefetch")
WARMUP_REPLAYS = 3  # replays left out of the TPOT statistics


def register(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "run", help="run a model offloaded on this GPU: TPOT, tokens/s, bandwidth, floors",
        description="Offload a model (a built-in name or config.json with random bf16 weights, or a "
        "safetensors checkpoint directory), prefill random prompts, decode with the CUDA-graph engine.")
    p.add_argument("--model", required=True, help="built-in name, config.json, or checkpoint directory")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--gpu-mem", type=float, help="GiB of HBM the model may use (the rest is offloaded)")
    budget.add_argument("--ratio", type=float, help="share of weight (and KV) bytes to offload, in [0, 1]")
    p.add_argument("--batch", type=int, required=True, help="sequences decoded together")
    p.add_argument("--prompt", type=int, required=True, help="prompt tokens per sequence")
    p.add_argument("--gen", type=int, required=True, help="tokens to generate per sequence (>= 2)")
    p.add_argument("--plan", choices=("greedy", "uniform"), help="per-op planner (default: greedy under "
                   "--gpu-mem, uniform with --ratio)")
    p.add_argument("--weights-only", action="store_true", help="keep the KV cache in HBM (weights only)")
    p.add_argument("--host-path", choices=("prefetch", "direct"), help="how linears read their host rows: "
                   "staged a layer ahead (prefetch, the default) or inside each op (direct)")
    p.add_argument("--compare", default="", help=f"comma-separated baselines: {', '.join(COMPARE)}")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights and prompts")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def parse_compare(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in COMPARE]
    if bad:
        raise InvalidArgumentError(f"--compare: unknown {', '.join(bad)}; allowed: {', '.join(COMPARE)}")
    return names


def check_args(args: argparse.Namespace) -> None:
    for label in ("batch", "prompt", "gen"):
        value = getattr(args, label)
        if value < 1:
            raise InvalidArgumentError(f"--{label} must be a positive integer, got {value}")
    if args.gen < 2:
        raise InvalidArgumentError(f"--gen must be at least 2 (one token from the prefill, then decode "
                                   f"steps), got {args.gen}")
    if args.ratio is not None and not (math.isfinite(args.ratio) and 0 <= args.ratio <= 1):
        raise InvalidArgumentError(f"--ratio must be in [0, 1], got {args.ratio}")
    if args.gpu_mem is not None and not (math.isfinite(args.gpu_mem) and args.gpu_mem > 0):
        raise InvalidArgumentError(f"--gpu-mem must be a positive number of GiB, got {args.gpu_mem}")
    parse_compare(args.compare)


def build_offloaded(args: argparse.Namespace, max_seq_len: int):
    """The offloaded model ``args`` describe (checkpoint directory: loaded; otherwise random)."""
    from smemkit.offload import load_offloaded, offload_model
    from smemkit.offload.e2e import hf_config, random_model

    options = dict(gpu_mem_gib=args.gpu_mem, ratio=args.ratio, plan=args.plan, batch=args.batch,
                   max_seq_len=max_seq_len, host_path=getattr(args, "host_path", None))
    source = Path(args.model)
    if source.is_dir() and any(source.glob("*.safetensors")):
        if args.weights_only:
            raise InvalidArgumentError("--weights-only applies to random models; a checkpoint is planned "
                                       "with its KV cache")
        return load_offloaded(source, **options)
    model = random_model(hf_config(args.model), seed=args.seed, device="cuda")
    return offload_model(model, **options, offload_kv=not args.weights_only)


def decode_measured(engine, prompt, steps: int, progress=None) -> dict:
    """Prefill ``prompt``, capture, decode ``steps`` timed replays; TPOT stats and the tokens."""
    from smemkit.offload.e2e import tpot_stats

    engine.prefill(prompt)
    if progress is not None:
        progress("prefill", 0)
    engine.capture()
    engine.decode(steps, graph=True, timed=True,
                  on_step=None if progress is None else (lambda i: progress("decode", i)))
    times = engine.step_times_ms[WARMUP_REPLAYS:] if steps > 2 * WARMUP_REPLAYS else engine.step_times_ms
    length = prompt.shape[1]
    return {**tpot_stats(times), "tokens": engine.history[:, length: length + steps + 1].cpu()}


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    from smemkit.runtime.device import require_gpu

    check_args(args)
    console = console or Console(stderr=args.json)
    require_gpu()
    import torch
    from rich.progress import Progress

    from smemkit.offload import decode_engine
    from smemkit.offload.e2e import floors, linear_weight_bytes, measure_hbm_rate, measure_host_rate

    max_seq_len = args.prompt + args.gen
    host_rate, hbm_rate = measure_host_rate(), measure_hbm_rate()
    off = build_offloaded(args, max_seq_len)
    cfg = off.model.config
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), generator=g).cuda()
    engine = decode_engine(off)
    steps = args.gen - 1
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("prefill", total=steps + 1)

        def progress(stage: str, i: int) -> None:
            bar.update(task, description=stage, advance=1)

        result = decode_measured(engine, prompt, steps, progress)
    layout = off.layout
    kv_read = engine.cache.hbm_read_bytes + engine.cache.host_bytes_per_step
    weight_read = linear_weight_bytes(off.model)
    host_bytes = layout.weight_host_bytes + engine.cache.host_bytes_per_step
    tpot_s = result["median_ms"] * 1e-3
    fl = floors(hbm_read_bytes=weight_read + kv_read - host_bytes, host_bytes=host_bytes,
                hbm_bytes_per_s=hbm_rate, host_bytes_per_s=host_rate)
    report = {
        "model": args.model, "batch": args.batch, "prompt": args.prompt, "gen": args.gen,
        "plan": layout.plan.method,
        "offloaded_ratio": layout.offloaded_bytes / max(1, weight_read + kv_read),
        "tpot_median_ms": result["median_ms"], "tpot_p90_ms": result["p90_ms"],
        "steps_timed": result["steps"], "tokens_per_s": args.batch / tpot_s,
        "effective_bandwidth_gbps": (weight_read + kv_read) / tpot_s / 1e9,
        "host_bytes_per_step": host_bytes, "host_link_gbps": host_rate / 1e9, "hbm_gbps": hbm_rate / 1e9,
        "host_link_floor_ms": fl.host_s * 1e3, "hbm_part_floor_ms": fl.hbm_s * 1e3,
        "predicted_tpot_ms": layout.plan.time_s * 1e3, "hbm_bytes": off.hbm_bytes,
        "pinned_bytes": off.pinned_bytes, "staging_bytes": layout.staging_bytes,
        "host_path": "prefetch" if off.prefetcher is not None else "direct",
        "capture_s": engine.capture_s, "compare": {},
    }
    tokens = result["tokens"]
    del engine
    off.free()
    del off
    torch.cuda.empty_cache()
    for name in parse_compare(args.compare):
        report["compare"][name] = _baseline(name, args, prompt, steps, tokens, layout)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    console.print(f"[bold]offload run[/bold]  {args.model}: batch {args.batch}, prompt {args.prompt}, "
                  f"{args.gen} tokens, plan {report['plan']}, {report['offloaded_ratio']:.1%} of weight+KV "
                  "bytes offloaded")
    console.print(f"  TPOT median {report['tpot_median_ms']:.3f} ms, p90 {report['tpot_p90_ms']:.3f} ms "
                  f"({result['steps']} steps, one CUDA graph per step); "
                  f"{report['tokens_per_s']:.1f} tokens/s")
    console.print(f"  effective bandwidth {report['effective_bandwidth_gbps']:.1f} GB/s (weight + KV bytes "
                  "per step / TPOT)")
    console.print(f"  host link: {host_bytes / 2**20:.1f} MiB per step at B_h {host_rate / 1e9:.1f} GB/s "
                  f"(measured) -> floor {fl.host_s * 1e3:.3f} ms; planner predicts "
                  f"{report['predicted_tpot_ms']:.3f} ms")
    console.print(f"  HBM {off_bytes(report['hbm_bytes'])}, pinned {off_bytes(report['pinned_bytes'])}")
    for name, rec in report["compare"].items():
        console.print(f"  {name}: TPOT median {rec['tpot_median_ms']:.3f} ms "
                      f"({rec['tpot_median_ms'] / report['tpot_median_ms']:.2f}x smemkit's)"
                      + ("" if rec.get("tokens_equal") is None else f", tokens equal: {rec['tokens_equal']}"))
    return 0


def off_bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def _baseline(name: str, args: argparse.Namespace, prompt, steps: int, tokens, layout) -> dict:
    import torch

    from smemkit.offload import decode_engine
    from smemkit.offload.e2e import hf_config, random_model

    if Path(args.model).is_dir() and any(Path(args.model).glob("*.safetensors")):
        raise InvalidArgumentError("--compare builds the same random weights from --seed; it does not apply "
                                   "to a checkpoint directory")
    model = random_model(hf_config(args.model), seed=args.seed, device="cuda")
    if name in ("hbm", "uva", "prefetch"):
        holder = None
        if name != "hbm":
            from smemkit.offload.baselines import prefetch_offload, uva_offload

            holder = (uva_offload if name == "uva" else prefetch_offload)(model, layout)
        engine = decode_engine(model, batch=args.batch, max_seq_len=args.prompt + args.gen)
        result = decode_measured(engine, prompt, steps)
        out = {"tpot_median_ms": result["median_ms"], "tpot_p90_ms": result["p90_ms"],
               "tokens_equal": bool(torch.equal(result["tokens"], tokens))}
        del engine
        if holder is not None:
            holder.free()
    else:
        from smemkit.offload.accelerate_baseline import accelerate_offload, decode_accelerate

        share = args.ratio if args.ratio is not None else 0.25
        model, cpu_layers = accelerate_offload(model, share)
        stats = decode_accelerate(model, prompt, min(steps, 5))
        out = {"tpot_median_ms": stats["median_ms"], "tpot_p90_ms": stats["p90_ms"], "cpu_layers": cpu_layers}
    del model
    torch.cuda.empty_cache()
    return out
