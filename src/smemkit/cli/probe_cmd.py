"""``smemkit probe``: measure this GPU's profile and compare it with the paper's Table II."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="measure this GPU (CREDIT Table II, HBM, host link)")
    p.add_argument("--trials", type=int, default=15, help="launches per figure (>= 15)")
    p.add_argument("--out", type=Path, help="write the profile and raw data as JSON here")
    p.set_defaults(run=run)


TABLE_II = (
    ("local load (cycles)", "local_load_cycles"),
    ("remote load (cycles)", "remote_load_cycles"),
    ("local read (B/cycle)", "local_read_bpc"),
    ("remote read (B/cycle)", "remote_read_bpc"),
    ("local store (B/cycle)", "local_store_bpc"),
    ("remote store (B/cycle)", "remote_store_bpc"),
)


def comparison_table(measured: dict, paper: dict[str, dict]) -> Table:
    table = Table(title="CREDIT Table II: this GPU against the paper")
    table.add_column("primitive")
    table.add_column("this GPU", justify="right")
    for name in paper:
        table.add_column(f"paper {name}", justify="right")
    table.add_column("vs H100", justify="right")
    for label, key in TABLE_II:
        ours = measured[key]
        h100 = paper.get("h100_sxm", {}).get(key)
        ratio = f"{ours / h100:.2f}x" if h100 else "-"
        table.add_row(label, f"{ours:.2f}", *(f"{p[key]:.2f}" for p in paper.values()), ratio)
    for P, cycles in sorted(measured["barrier_cycles"].items(), key=lambda kv: int(kv[0])):
        refs = [p["barrier_cycles"].get(int(P)) for p in paper.values()]
        h100 = paper.get("h100_sxm", {}).get("barrier_cycles", {}).get(int(P))
        table.add_row(f"cluster barrier P={P} (cycles)", f"{cycles:.0f}",
                      *("-" if r is None else f"{r:.0f}" for r in refs),
                      f"{cycles / h100:.2f}x" if h100 else "-")
    return table


def run(args: argparse.Namespace) -> int:
    from smemkit.hw.environment import device_block, provenance
    from smemkit.hw.probe import paper_reference, run_probe

    console = Console()
    with console.status("probing") as status:
        result = run_probe(args.trials, progress=lambda msg: status.update(f"probing: {msg}"))
    result["device"] = device_block()
    result["provenance"] = provenance(result["device"])
    result["paper"] = paper_reference()
    profile = result["profile"]
    console.print(comparison_table(profile["dsmem"], result["paper"]))
    raw = result["raw"]
    console.print(
        f"SM clock {profile['sm_clock_ghz']:.3f} GHz nominal, "
        f"{raw['sm_clock_measured_ghz']:.3f} GHz measured; CTAs on distinct SMs: "
        f"{raw['dsmem']['distinct_sms']}"
    )
    console.print(f"HBM copy {profile['hbm_tbps']:.2f} TB/s; host copy engine "
                  f"{profile['host_copy_gbps']:.1f} GB/s; SM loads of pinned memory by CTAs: "
                  + ", ".join(f"{k}:{v:.1f}" for k, v in profile["host_sm_load_gbps"].items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        console.print(f"wrote {args.out}")
    return 0
