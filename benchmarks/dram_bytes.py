"""DRAM bytes per element from Nsight Compute, non-cluster vs cluster kernel (CREDIT Fig. 5).

    python benchmarks/dram_bytes.py --out benchmarks/results/h200/dram_bytes.json [--P 8]

Runs this file again under ``ncu`` (``--driver`` mode launches each workload's re-read kernel
and its cluster kernel once at N = 64K), collecting ``dram__bytes_read.sum`` and
``dram__bytes_write.sum`` with clocks left alone, and reports (read + write) / (M x N) next to
the spec's compulsory and re-read-kernel byte counts. It also asks for a utilization breakdown
of the same launches (DRAM, L2, issue slots, LSU and shared pipes, warps per cycle, duration:
metrics Nsight Compute accepted on the H200 for the atomics tool) — what bounds the kernels that
miss the bandwidth bar; if ncu refuses that set, it runs again with the two DRAM metrics.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from smemkit.hw import ncu
from smemkit.hw.environment import device_block, provenance
from smemkit.reduction import BUILTIN, run
from smemkit.reduction.codegen import Variant, kernel_name
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.paths import find_tool

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
BREAKDOWN = ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
             "smsp__issue_active.avg.pct_of_peak_sustained_active",
             "smsp__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
             "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
             "sm__warps_active.avg.per_cycle_active", "smsp__inst_executed.sum", "gpu__time_duration.sum")
N = 65536
ROWS = {"layernorm_bwd": 2048}


def plan(P: int) -> list[tuple[str, int, Variant]]:
    return [(name, ROWS.get(name, 4096), v) for name in sorted(BUILTIN)
            for v in (Variant("reread"), Variant("cluster", P))]


def driver(P: int) -> None:
    import torch

    for name, M, variant in plan(P):
        tensors, scalars = example_inputs(name, M, N, device="cuda")
        size = variant.P if variant.kind == "cluster" else None
        run(BUILTIN[name], tensors, scalars, variant=variant.kind, cluster_size=size)
        torch.cuda.synchronize()
        del tensors


def bytes_per_element(records: list[ncu.LaunchRecord], P: int) -> list[dict]:
    """One row per planned kernel: measured DRAM bytes per element and the spec's counts."""
    by_name = {}
    for rec in records:
        by_name.setdefault(rec.kernel.split("(")[0].strip(), rec)
    rows = []
    for name, M, variant in plan(P):
        rec = by_name.get(kernel_name(BUILTIN[name], variant))
        read = rec.value(METRICS[0]) if rec else None
        write = rec.value(METRICS[1]) if rec else None
        measured = None if read is None or write is None else (read + write) / (M * N)
        b = BUILTIN[name].bytes
        breakdown = {m: rec.value(m) for m in BREAKDOWN if rec and rec.value(m) is not None}
        if "smsp__inst_executed.sum" in breakdown:
            breakdown["warp_instructions_per_element"] = breakdown["smsp__inst_executed.sum"] / (M * N)
        rows.append({"workload": name, "M": M, "N": N, "variant": variant.kind, "P": variant.P,
                     "dram_bytes_per_element": measured, "compulsory": b.compulsory,
                     "reread_kernel_model": b.baseline, "breakdown": breakdown})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/h200/dram_bytes.json"))
    parser.add_argument("--P", type=int, default=8, help="cluster size of the cluster kernel")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        driver(args.P)
        return 0
    exe = find_tool("ncu")
    if exe is None:
        print("Nsight Compute (ncu) not found", file=sys.stderr)
        return 2
    app = [sys.executable, __file__, "--driver", "--P", str(args.P)]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "dram.ncu-rep"
        for metrics in (METRICS + BREAKDOWN, METRICS):
            cmd = ncu.profile_command(app, report, ncu=exe, kernel_regex="^rr_", metrics=metrics)
            try:
                if subprocess.run(cmd, timeout=270).returncode == 0:
                    break
                why = "refused"
            except subprocess.TimeoutExpired:
                why = "timed out on"  # (its --driver child may still be running; it ends on its own)
            print(f"ncu {why} {len(metrics)} metrics", file=sys.stderr)
        else:
            return 1
        records = ncu.read_report(report, ncu=exe)
    rows = bytes_per_element(records, args.P)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    device = device_block()
    args.out.write_text(json.dumps({"provenance": provenance(device), "device": device, "records": rows},
                                   indent=1) + "\n")
    for r in rows:
        got = r["dram_bytes_per_element"]
        bd = r["breakdown"]
        util = " ".join(f"{k.split('__')[0]}:{bd[k]:.0f}%" for k in BREAKDOWN[:5] if k in bd)
        print(f"{r['workload']:14s} {r['variant']:8s} P={r['P']:2d} "
              f"{'-' if got is None else f'{got:6.2f}'} B/elem (compulsory {r['compulsory']}, "
              f"re-read model {r['reread_kernel_model']}) {util}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
