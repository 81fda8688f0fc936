"""``smemkit bench reduction``: the CREDIT evaluation on the current GPU, in one command.

It runs, in order, the probe (Table II), ``benchmarks/reduction.py`` (every variant and baseline:
Fig. 3, Table IV), ``benchmarks/credit_eval.py`` (model inputs and cluster timings: Table V,
Fig. 4), ``benchmarks/dram_bytes.py`` (Nsight Compute DRAM bytes: Fig. 5) and
``benchmarks/report_credit.py`` (markdown + PNGs), all writing into ``--out``. The benchmark
scripts live in the source checkout (``benchmarks/``), not in the installed package, so the
command needs a checkout; it says so when there is none.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from smemkit.errors import SmemkitError

QUICK_WIDTHS = ("16384", "65536")
SKIPPABLE = ("probe", "reduction", "credit-eval", "dram-bytes")


@dataclass(frozen=True)
class Step:
    name: str
    what: str
    argv: tuple[str, ...]
    output: str  # file this step writes into --out (removed before it runs: no stale results)
    needs: tuple[str, ...] = ()  # files in --out it reads
    needs_ncu: bool = False


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="reproduce a paper's evaluation on this GPU (needs a GPU and a "
                       "source checkout)")
    actions = p.add_subparsers(dest="bench_action", required=True, metavar="SUITE")
    r = actions.add_parser("reduction", help="CREDIT: Table II, Fig. 3-5, Tables IV-V on this GPU")
    r.add_argument("--out", type=Path, default=Path("smemkit-bench"),
                   help="folder for every JSON, the markdown report and the PNGs (default ./smemkit-bench)")
    r.add_argument("--quick", action="store_true",
                   help=f"widths {'/'.join(QUICK_WIDTHS)} only, fewer methods")
    r.add_argument("--skip", nargs="+", default=[], choices=SKIPPABLE,
                   help="steps to leave out (their JSON may already be in --out)")
    r.add_argument("--print-commands", action="store_true", help="print the steps and exit (no GPU needed)")
    r.set_defaults(run=run)


def benchmarks_dir() -> Path:
    """``benchmarks/`` of the source checkout this package was installed from."""
    import smemkit

    here = Path(smemkit.__file__).resolve().parents[2] / "benchmarks"
    if not (here / "credit_eval.py").is_file():
        raise SmemkitError(
            f"`smemkit bench reduction` runs the benchmark scripts of a source checkout, and there is "
            f"none at {here}: clone the repository and `pip install -e .` from it")
    return here


def steps(bench: Path, out: Path, quick: bool, skip: list[str]) -> list[Step]:
    py = sys.executable
    widths = ("--widths", *QUICK_WIDTHS) if quick else ()
    methods = ("--methods", "compile", "triton", "staged", "reread", "cluster") if quick else ()
    plan = [
        Step("probe", "Table II: DSMEM primitives, HBM and host link",
             (py, "-m", "smemkit", "probe", "--out", str(out / "probe.json")), "probe.json"),
        Step("reduction", "every variant and baseline per (workload, N): Fig. 3, Table IV",
             (py, str(bench / "reduction.py"), "--out", str(out / "reduction.json"), *widths, *methods),
             "reduction.json"),
        Step("credit-eval", "model inputs, control kernels, cluster timings: Table V, Fig. 4",
             (py, str(bench / "credit_eval.py"), "--out", str(out / "credit_eval.json"),
              "--baselines", str(out / "reduction.json"), *widths), "credit_eval.json",
             needs=("reduction.json",)),
        Step("dram-bytes", "Nsight Compute DRAM bytes per element at 64K: Fig. 5",
             (py, str(bench / "dram_bytes.py"), "--out", str(out / "dram_bytes.json")), "dram_bytes.json",
             needs_ncu=True),
        Step("report", "markdown report and PNGs",
             (py, str(bench / "report_credit.py"), str(out / "credit_eval.json"),
              str(out / "reduction.json"), str(out)), "credit_eval.md",
             needs=("credit_eval.json", "reduction.json")),
    ]
    return [s for s in plan if s.name not in skip]


def run(args: argparse.Namespace) -> int:
    console = Console()
    plan = steps(benchmarks_dir(), args.out, args.quick, args.skip)
    if args.print_commands:
        for s in plan:  # plain print: commands must not be wrapped
            print(f"{s.name}: {s.what}\n  {' '.join(s.argv)}")
        return 0
    from smemkit.runtime.device import require_gpu
    from smemkit.runtime.paths import find_tool

    require_gpu()
    args.out.mkdir(parents=True, exist_ok=True)
    made = {s.output for s in plan}
    missing = [f"{s.name} needs {n}" for s in plan for n in s.needs
               if n not in made and not (args.out / n).exists()]
    if missing:  # a skipped step's input must already be there, before any GPU time is spent
        raise SmemkitError(f"in {args.out}: " + "; ".join(missing))
    for s in plan:
        (args.out / s.output).unlink(missing_ok=True)
    failed = []
    for i, s in enumerate(plan, 1):
        if s.needs_ncu and find_tool("ncu") is None:
            console.print(f"[yellow]{s.name}: skipped, Nsight Compute (ncu) not found; the report "
                          "says Fig. 5 was not measured[/]")
            continue
        console.rule(f"[{i}/{len(plan)}] {s.name}: {s.what}")
        t0 = time.time()
        with console.status(f"{s.name} running (output follows)"):
            rc = subprocess.run(s.argv).returncode
        console.print(f"{s.name}: {'ok' if rc == 0 else f'failed (exit {rc})'} in {time.time() - t0:.0f} s")
        if rc != 0:
            failed.append(s.name)
            if s.name in ("reduction", "credit-eval"):
                break  # the later steps read these files
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]; partial results in {args.out}")
        return 1
    console.print(f"[green]done[/]: {args.out / 'credit_eval.md'} and the JSON it was made from")
    return 0
