"""``smemkit advise``: will a thread-block cluster (DSMEM) pay for this workload and shape?"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from smemkit.cli.tables import show
from smemkit.errors import check_int_range


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="CREDIT cost model: does the cluster kernel pay, at which P?")
    p.add_argument("workload", help="built-in workload name or path/to/spec.py")
    p.add_argument("--rows", type=int, required=True, help="rows M")
    p.add_argument("--width", type=int, required=True, help="row width N")
    p.add_argument("--profile", help="h100, h200, rtx5090 or a profile JSON (default: this GPU's)")
    p.add_argument("--json", action="store_true", help="print the decision and every term as JSON")
    p.set_defaults(run=run)


# One grid launch's limits: rows and the row width fit CUDA's 2**31 - 1 blocks and int32 indices.
MAX_ROWS = MAX_WIDTH = 2**31 - 1


def as_dict(e) -> dict:
    """An Explanation as JSON-ready data (times in ms)."""
    out = {"workload": e.workload, "rows": e.M, "width": e.N, "profile": e.profile.name,
           "rejected": e.rejected, "inputs": e.inputs, "save_basis": e.save_basis,
           "crossover": e.crossover, "crossover_widths": list(e.crossover_widths)}
    if e.verdict is not None:
        best = e.verdict.best
        out["verdict"] = {"profitable": e.verdict.profitable, "best_P": best.P if best else None,
                          "tie_ms": e.verdict.tie_ms,
                          "terms": [{"P": t.P, "legal": t.legal, "reason": t.reason, "waves": t.waves,
                                     "k": t.ctas_per_sm, "t_save": t.t_save, "t_ctrl": t.t_ctrl,
                                     "t_replay": t.t_replay, "t_deposit": t.t_deposit, "t_dsm": t.t_dsm,
                                     "delta": t.delta if t.legal else None} for t in e.verdict.terms]}
    if e.measured is not None:
        m = e.measured
        out["baseline"] = {"ms": m.baseline_ms, "variant": m.baseline_variant,
                           "ctas_per_sm": m.baseline_ctas_per_sm, "triton_ms": m.triton_ms}
    return out


def run(args: argparse.Namespace) -> int:
    from smemkit.reduction.advise import explain
    from smemkit.reduction.cost_model import dispatch_choice

    check_int_range("--rows", args.rows, 1, MAX_ROWS)
    check_int_range("--width", args.width, 1, MAX_WIDTH)
    e = explain(args.workload, args.rows, args.width, args.profile)
    if args.json:
        print(json.dumps(as_dict(e), indent=2))
        return 0
    console = Console()
    if e.rejected:
        console.print(f"[bold]verdict: keep the non-cluster kernel[/bold] - {e.rejected}")
        return 0
    table = Table(title=f"{e.workload}, M = {e.M}, N = {e.N} on {e.profile.name} (times in ms)")
    for col in ("P", "legal", "waves", "k", "T_save", "T_ctrl", "T_replay", "T_deposit", "T_DSM", "ΔT"):
        table.add_column(col, justify="right")
    for t in e.verdict.terms:
        if not t.legal:
            table.add_row(str(t.P), "no", *["-"] * 8)
            continue
        table.add_row(str(t.P), "yes", str(t.waves), f"{t.ctas_per_sm:.2f}", *(f"{v:.4f}" for v in (
            t.t_save, t.t_ctrl, t.t_replay, t.t_deposit, t.t_dsm, t.delta)))
    show(console, table)
    for t in e.verdict.terms:
        if not t.legal:
            console.print(f"P = {t.P} not legal: {t.reason}")
    console.print("k: the cluster kernel's CTAs per SM at once; ΔT = T_save - (T_ctrl + T_replay + "
                  "T_deposit + T_DSM) / k")
    console.print(f"inputs: {e.inputs}")
    m = e.measured
    per_sm = "" if m.baseline_ctas_per_sm is None else f", {m.baseline_ctas_per_sm:.2f} CTAs per SM at once"
    how = m.baseline_variant if e.inputs.startswith("measured") else "estimated at HBM bandwidth"
    console.print(f"non-cluster baseline: T_B = {m.baseline_ms:.4f} ms ({how}{per_sm})")
    console.print(e.save_basis)
    best = e.verdict.best
    if e.verdict.profitable:
        console.print(f"[bold]verdict: use the cluster kernel with P = {best.P}[/bold] "
                      f"(predicted saving {best.delta:.4f} ms)")
        if e.verdict.tie_ms > 0:
            console.print(f"P: the smallest whose ΔT > 0 is within {e.verdict.tie_ms:.4f} ms "
                          f"({e.verdict.tie_ms / m.baseline_ms:.0%} of T_B) of the largest: closer "
                          "ΔTs do not rank the sizes")
    else:
        console.print("[bold]verdict: keep the non-cluster kernel[/bold] (no legal P has ΔT > 0)")
    if m.triton_ms is not None:
        kind, _ = dispatch_choice(e.verdict, m)
        runs = "the Triton kernel instead" if kind == "triton" else "the model's pick"
        console.print(f"smemkit's Triton kernel timed {m.triton_ms:.4f} ms here: dispatch runs {runs}")
    where = ", ".join(str(w) for w in e.crossover_widths)
    console.print(f"predicted crossover N* over widths {{{where}}}: "
                  f"{e.crossover if e.crossover else 'none (never pays)'}")
    return 0
