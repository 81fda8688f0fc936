"""``smemkit offload plan``: per-op offload ratios for a model, batch, context and GPU budget;
``smemkit offload path``: which path ``split_linear`` takes for one weight, batch and ratio.

Runs on the CPU only: it evaluates the cost models, it does not run kernels.
"""

from __future__ import annotations

import argparse
import json
import re

from rich.console import Console
from rich.table import Table

from smemkit.cli.tables import show
from smemkit.errors import InvalidArgumentError, check_fraction, check_int_range, check_number_range
from smemkit.offload.costmodel import hardware_from_profile
from smemkit.offload.models import BUILTIN_MODELS, MAX_DIM, decode_ops, host_resident_bytes
from smemkit.offload.planner import (
    GIB,
    by_kind,
    greedy_plan,
    oracle_plan,
    required_offload_bytes,
    total_bytes,
    uniform_plan,
)
from smemkit.offload.tensor_parallel import MAX_TP, TP_LINK, collective_s, shard_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("offload", help="DAK offloading: plan per-op host/HBM splits (cost model, no GPU)")
    actions = p.add_subparsers(dest="offload_action", required=True, metavar="ACTION")
    plan = actions.add_parser(
        "plan", help="per-op offload ratios: DAK greedy vs uniform vs exact oracle",
        description="Predict one decode step's time with weights+KV split between HBM and pinned "
        "host memory, for DAK's greedy per-op ratios, one uniform ratio, and the exact optimum.")
    plan.add_argument("--model", required=True,
                      help=f"HuggingFace config.json (file or folder) or one of {', '.join(BUILTIN_MODELS)}")
    plan.add_argument("--batch", type=int, required=True, help="sequences decoded together (B)")
    plan.add_argument("--seq", type=int, required=True, help="context length in tokens (L)")
    plan.add_argument("--gpu-mem", type=float, required=True,
                      help="GiB of HBM for weights + KV cache (leave out activations and workspace)")
    plan.add_argument("--profile", help="device profile: h100, h200, rtx5090 or a profile JSON file")
    plan.add_argument("--tflops", type=float, help="dense bf16 TFLOP/s (default: per profile)")
    plan.add_argument("--host-gbps", type=float, help="host link GB/s (default: the profile's copy rate)")
    plan.add_argument("--hbm-tbps", type=float, help="HBM TB/s (default: the profile's)")
    plan.add_argument("--exact-budget", action="store_true",
                      help="offload exactly the required bytes (DAK's equality) instead of at least them")
    plan.add_argument("--tp", type=int, default=1,
                      help="tensor-parallel GPUs: plan one shard per GPU, --gpu-mem each (default 1)")
    plan.add_argument("--json", action="store_true", help="print the plans as JSON")
    plan.set_defaults(run=run)
    from smemkit.offload import run_cmd

    run_cmd.register(actions)
    path = actions.add_parser(
        "path", help="which split_linear path runs for a weight, batch and ratio, and the model's times",
        description="The rule split_linear(path='auto') applies (docs/offload.md): cuBLAS with no "
        "host rows, else the split GEMV kernel or the copy-engine ring, with the model's predicted "
        "time of each (memory-bound terms).")
    path.add_argument("--shape", required=True, help="weight N_out x K, e.g. 4096x14336")
    path.add_argument("--batch", type=int, required=True, help="input rows")
    path.add_argument("--ratio", type=float, required=True, help="offload ratio r in [0, 1]")
    path.add_argument("--profile", help="device profile: h100, h200, rtx5090 or a profile JSON file")
    path.add_argument("--json", action="store_true", help="print the choice and the times as JSON")
    path.set_defaults(run=run_path)


def relative_text(x: float) -> str:
    """A relative difference for people: a percentage to three significant digits, and exactly
    0 below 1e-9 (float rounding of two sums of the same terms, not a difference)."""
    if abs(x) < 1e-9:
        return "0 %"
    return f"{x * 100:+.3g} %"


def check_plan_args(args: argparse.Namespace) -> None:
    """The plan's numbers, checked before any model or profile is read."""
    check_int_range("--batch", args.batch, 1, MAX_DIM)
    check_int_range("--seq", args.seq, 1, MAX_DIM)
    check_number_range("--gpu-mem (GiB)", args.gpu_mem, 0.0, 1e9)
    check_int_range("--tp", getattr(args, "tp", 1), 1, MAX_TP)
    for label, value, high in (("--tflops", args.tflops, 1e6), ("--host-gbps", args.host_gbps, 1e5),
                               ("--hbm-tbps", args.hbm_tbps, 1e3)):
        if value is not None:
            check_number_range(label, value, 1e-3, high)


def parse_shape(text: str) -> tuple[int, int]:
    """A weight shape written N_outxK ("4096x14336"), both in [1, 2**31 - 1]."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise InvalidArgumentError(f"--shape {text!r}: expected N_outxK, e.g. 4096x14336")
    n_out, k = int(m.group(1)), int(m.group(2))
    if not (1 <= n_out <= MAX_DIM and 1 <= k <= MAX_DIM):
        raise InvalidArgumentError(f"--shape {text!r}: both sizes must be in [1, {MAX_DIM}]")
    return n_out, k


def run_path(args: argparse.Namespace, console: Console | None = None) -> int:
    from smemkit.hw.profile import select_profile
    from smemkit.offload.split_rule import (
        KERNEL_MAX_ROWS,
        faster_path,
        fixed_path,
        host_rows_for_ratio,
        path_times,
    )

    console = console or Console()
    n_out, k = parse_shape(args.shape)
    check_int_range("--batch", args.batch, 1, MAX_DIM)
    check_fraction("--ratio", args.ratio)
    host_rows = host_rows_for_ratio(n_out, args.ratio)
    profile, reason = select_profile(args.profile)
    hw = hardware_from_profile(profile)
    host_bytes, hbm_bytes = host_rows * k * 2, (n_out - host_rows) * k * 2
    fixed = fixed_path(args.batch, host_bytes, k)
    large = fixed == "ring"  # more than KERNEL_MAX_ROWS rows
    times = None if fixed in ("cublas", "kernel") else path_times(hbm_bytes, host_bytes, hw.hbm_bytes_per_s,
                                                                  hw.host_bytes_per_s)
    chosen = fixed or faster_path(times)
    if fixed == "cublas":
        why = "no host rows: the plain all-HBM product"
    elif fixed == "kernel":
        why = f"K = {k}: a ring slot cannot hold 16 weight rows"
    elif large:
        why = (f"more than {KERNEL_MAX_ROWS} rows: the ring measured faster at 56 of 60 points of batch "
               "16, 32 and 64")
    else:
        why = "the faster by the model below"
    shown = () if times is None else ("ideal", "ring") if large else ("ideal", "kernel", "ring")
    if args.json:
        print(json.dumps({"shape": [n_out, k], "batch": args.batch, "ratio": args.ratio,
                          "host_rows": host_rows, "host_bytes": host_bytes, "hbm_bytes": hbm_bytes,
                          "profile": profile.name, "path": chosen, "why": why,
                          "times_s": {name: times[name] for name in shown}}, indent=2))
        return 0
    console.print(f"[bold]split_linear path[/bold]  {n_out}x{k} bf16, batch {args.batch}, ratio "
                  f"{args.ratio} -> {host_rows} host rows ({host_bytes / 2**20:.1f} MiB), profile "
                  f"{profile.name} ({reason})")
    console.print(f"  path: {chosen} ({why})")
    for name in shown:
        console.print(f"  {name:7s} {times[name] * 1e3:8.3f} ms")
    if shown:
        console.print(f"  (memory-bound terms only: B_g, B_h from profile {profile.name}; the kernel's "
                      "slowdown factors and the ring's copy overhead fitted on the H200, see "
                      "smemkit.offload.gemv and docs/offload.md)")
    return 0


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    from smemkit.hw.profile import select_profile

    console = console or Console()
    check_plan_args(args)
    from smemkit.offload.model_source import model_config_from_source
    full = model_config_from_source(args.model)
    tp = getattr(args, "tp", 1)
    cfg = shard_config(full, tp)  # with --tp every figure below is one GPU's shard
    collectives = collective_s(full, tp, args.batch)
    ops = decode_ops(cfg, args.batch, args.seq)
    profile, reason = select_profile(args.profile)
    hw = hardware_from_profile(profile, tflops=args.tflops, host_gbps=args.host_gbps,
                               hbm_tbps=args.hbm_tbps)
    required = required_offload_bytes(ops, args.gpu_mem * GIB)
    greedy = greedy_plan(ops, hw, required, exact=args.exact_budget)
    uniform = uniform_plan(ops, hw, required)
    oracle = oracle_plan(ops, hw, required, exact=args.exact_budget)
    held = total_bytes(ops)
    kv = sum(op.weight_bytes for op in ops if op.kind == "attention")
    plans = {"greedy": greedy, "uniform": uniform, "oracle": oracle}
    kinds = {name: by_kind(ops, plan, hw) for name, plan in plans.items()}

    if args.json:
        out = {
            "model": cfg.name, "dtype": cfg.dtype, "batch": args.batch, "seq": args.seq,
            "gpu_mem_gib": args.gpu_mem,
            "profile": profile.name,
            "hardware": {"hbm_bytes_per_s": hw.hbm_bytes_per_s, "host_bytes_per_s": hw.host_bytes_per_s,
                         "flops_per_s": hw.flops_per_s, "sources": hw.sources},
            "weight_bytes": held - kv, "kv_bytes": kv, "host_resident_bytes": host_resident_bytes(cfg),
            "required_offload_bytes": required, "exact_budget": args.exact_budget,
            "tp": tp, "collective_s": collectives,
            **({"collective_model": TP_LINK["source"]} if tp > 1 else {}),
            "plans": {name: {"time_s": p.time_s, "offloaded_bytes": p.offloaded_bytes,
                             "by_kind": [{"kind": k.kind, "count": k.count, "bytes": k.bytes,
                                          "ratio": k.ratio, "time_s": k.time_s, "bound": k.bound}
                                         for k in kinds[name]]}
                      for name, p in plans.items()},
        }
        print(json.dumps(out, indent=2))
        return 0

    console.print(f"[bold]offload plan[/bold]  {cfg.name}: batch {args.batch}, context {args.seq}, "
                  f"{cfg.dtype}, {len(ops)} ops per decode step")
    if tp > 1:
        console.print(f"  tensor parallel over {tp} GPUs: one shard's plan, each GPU with --gpu-mem and "
                      f"its own "
                      f"host link; the step adds {collectives * 1e3:.2f} ms of collectives "
                      f"({TP_LINK['source']})")
    console.print(f"  profile  {profile.name}: {reason}")
    console.print(f"  B_g {hw.hbm_bytes_per_s / 1e12:.3f} TB/s  ({hw.sources['B_g']})")
    console.print(f"  B_h {hw.host_bytes_per_s / 1e9:.1f} GB/s  ({hw.sources['B_h']})")
    console.print(f"  F   {hw.flops_per_s / 1e12:.1f} TFLOP/s  ({hw.sources['F']})")
    if cfg.dtype_bytes != 2 and args.tflops is None:
        console.print(f"  note: F is the 16-bit tensor rate; for {cfg.dtype} weights pass --tflops")
    console.print(f"  balanced ratio B_h/(B_h+B_g) = {hw.balanced_ratio:.2%}")
    emb = host_resident_bytes(cfg)
    console.print(f"  weights {(held - kv) / GIB:.2f} GiB + KV {kv / GIB:.2f} GiB = {held / GIB:.2f} GiB; "
                  f"GPU budget {args.gpu_mem:.2f} GiB -> must offload {required / GIB:.2f} GiB "
                  f"({required / held:.1%})" + (f"; input embedding {emb / GIB:.2f} GiB kept in host "
                                                 "memory (B rows read per step)" if emb else ""))

    table = Table(title="Offload ratio per op type (the same in every layer)")
    for col in ("op", "n", "GiB", "bound", "greedy", "uniform", "oracle", "greedy ms"):
        table.add_column(col, justify="left" if col in ("op", "bound") else "right")
    for g, u, o in zip(kinds["greedy"], kinds["uniform"], kinds["oracle"], strict=True):
        table.add_row(g.kind, str(g.count), f"{g.bytes / GIB:.2f}", g.bound, f"{g.ratio:.1%}",
                      f"{u.ratio:.1%}", f"{o.ratio:.1%}", f"{g.time_s * 1e3:.2f}")
    show(console, table)

    mode = "exactly" if args.exact_budget else "at least"
    console.print(f"Predicted decode step (time per output token), offloading {mode} the required bytes:")
    for name, plan in plans.items():
        step = plan.time_s + collectives
        console.print(f"  {name:8s} {step * 1e3:9.3f} ms  {args.batch / step:10.1f} tokens/s  "
                      f"offloads {plan.offloaded_bytes / GIB:.2f} GiB" + (" per GPU" if tp > 1 else ""))
    gap = (greedy.time_s - oracle.time_s) / oracle.time_s
    console.print(f"  greedy vs oracle: {relative_text(gap)}; uniform / greedy = "
                  f"{uniform.time_s / greedy.time_s:.3f}x")
    console.print("  (cost model only, not measured: max(C/F, (1-x)fW/B_g, xfW/B_h) per op, f the share of "
                  "its bytes a step reads (1 but for experts). Bytes beyond the turning points cost f/B_h "
                  "each, so greedy and oracle ratios may differ at equal time among ops of one f.)")
    experts = next((op for op in ops if op.kind == "experts"), None)
    if experts is not None:
        console.print(f"  experts: {cfg.num_experts} per layer, {cfg.experts_per_token} per token; a step of "
                      f"{args.batch} tokens reads f = {experts.read_fraction:.1%} of them (uniform routing), "
                      "so host-bound bytes go to them first")
    return 0
