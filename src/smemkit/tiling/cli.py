"""``smemkit tiling analyze|list`` and ``smemkit occupancy``: bank conflicts, layout advice, occupancy.

``register(sub)`` adds both subcommands; ``register_tiling`` and ``register_occupancy`` add one each.
"""

from __future__ import annotations

import argparse
import json
import re

from rich.console import Console
from rich.markup import escape

from smemkit.cli.tables import show
from smemkit.errors import InvalidArgumentError, check_int_range
from smemkit.tiling import render
from smemkit.tiling.advisor import advise
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.occupancy import ARCHS, occupancy
from smemkit.tiling.pattern import AccessReport, Instruction, PatternReport, analyze
from smemkit.tiling.spec_io import load_pattern


def register(sub: argparse._SubParsersAction) -> None:
    register_tiling(sub)
    register_occupancy(sub)


def register_tiling(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tiling", help="shared-memory bank conflicts per warp instruction, "
                       "padding/swizzle advice")
    actions = p.add_subparsers(dest="tiling_action", required=True, metavar="ACTION")
    a = actions.add_parser("analyze", help="wavefronts per instruction, one warp's bank picture, advice")
    a.add_argument("pattern", help=f"a .json or .py pattern file, or a built-in: {', '.join(BUILTIN)}")
    a.add_argument("--arch", default="sm_90", choices=sorted(ARCHS), help="for the occupancy of the advice")
    a.add_argument("--regs", type=int, help="registers per thread for occupancy (default: the pattern's)")
    a.add_argument("--max-pad", type=int, help="largest row padding tried, in elements (default 128 B)")
    a.add_argument("--warp", type=int, help="show the bank picture of this warp (default: worst instruction)")
    a.add_argument("--all-instructions", action="store_true", help="list every instruction, not groups")
    a.add_argument("--no-advice", action="store_true", help="skip the padding/swizzle search")
    a.add_argument("--json", action="store_true", help="print the report as JSON")
    a.set_defaults(run=run_analyze)
    lst = actions.add_parser("list", help="the built-in example patterns")
    lst.set_defaults(run=run_list)


def _bytes(text: str) -> int:
    """``4096``, ``48K``/``48KB``/``48KiB`` (x1024) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*(k|kb|kib)?\s*", str(text).lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: give bytes as an integer, or KB with a K suffix (48K)")
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def register_occupancy(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("occupancy", help="theoretical occupancy for sm_80/86/89/90")
    p.add_argument("--arch", default="sm_90", choices=sorted(ARCHS))
    p.add_argument("--threads", type=int, required=True, help="threads per block")
    p.add_argument("--regs", type=int, required=True, help="registers per thread")
    p.add_argument("--smem", type=_bytes, default=0,
                   help="static + dynamic shared memory per block (bytes, or 48K)")
    p.add_argument("--cluster", type=int, help="cluster size P (sm_90): max active clusters")
    p.add_argument("--non-portable", action="store_true", help="allow cluster size up to 16 (sm_90)")
    p.add_argument("--carveout", type=int, help="shared-memory carveout in KB (default: the largest)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run_occupancy)


def run_list(args: argparse.Namespace) -> int:
    console = Console()
    for name, make in BUILTIN.items():
        pattern = make()
        console.print(f"[bold]{name}[/bold]: {pattern.description}")
    return 0


# What the bank rule and the occupancy calculator matched on the H200 (Nsight Compute's wavefronts
# per microkernel, the driver's occupancy per configuration): benchmarks/results/h200/tiling.json,
# "summary" (a test checks these numbers against that file).
VALIDATION = {"wavefronts": (149, 150), "occupancy": (60, 60), "clusters": (60, 60)}


def validation_note() -> str:
    wf, occ, cl = (VALIDATION[k] for k in ("wavefronts", "occupancy", "clusters"))
    return (f"Model: the bank rule of docs/tiling.md. On the H200 it gave Nsight Compute's wavefronts for "
            f"{wf[0]} of {wf[1]} microkernels, and the occupancy calculator the driver's answer for "
            f"{occ[0]} of {occ[1]} configurations and {cl[0]} of {cl[1]} cluster records "
            "(benchmarks/results/h200/tiling.json).")


def check_analyze_args(args: argparse.Namespace) -> None:
    """The numeric options, checked before the pattern is read."""
    if args.regs is not None:
        check_int_range("--regs", args.regs, 0, 255)
    if args.max_pad is not None:
        check_int_range("--max-pad (elements)", args.max_pad, 0, 1024)
    if args.warp is not None:
        check_int_range("--warp", args.warp, 0, 31)  # at most 1024 threads: warps 0..31


def run_analyze(args: argparse.Namespace) -> int:
    check_analyze_args(args)
    pattern = load_pattern(args.pattern)
    report = analyze(pattern)
    advice = None if args.no_advice else advise(pattern, args.arch, args.regs, args.max_pad)
    if args.json:
        print(json.dumps(render.report_dict(report, advice), indent=2))
        return 0
    console = Console()
    if pattern.description:
        console.print(escape(pattern.description))
    show(console, render.summary_table(report))
    for acc in report.accesses:
        show(console, render.instruction_table(acc, args.all_instructions))
    for acc, inst in _pictures(report, args.warp):
        loop = ", ".join(f"{k}={v}" for k, v in inst.loop.items())
        title = (f"bank picture: {acc.access.title}, warp {inst.warp}{', ' + loop if loop else ''}: "
                 f"{inst.result.wavefronts} wavefront(s), ideal {inst.result.ideal}")
        show(console, render.bank_table(inst.result, title))
    if advice is not None:
        show(console, render.advice_table(advice))
    console.print(f"[dim]{validation_note()}[/dim]")
    return 0


def _pictures(report: PatternReport, warp: int | None) -> list[tuple[AccessReport, Instruction]]:
    """Which instructions to draw: the worst of each conflicting access, or warp ``warp``'s first
    instruction of every access; a conflict-free pattern still shows its first instruction."""
    if warp is not None:
        if not 0 <= warp < report.pattern.warps:
            raise InvalidArgumentError(f"--warp={warp}: the block has warps 0..{report.pattern.warps - 1}")
        return [(a, next(i for i in a.instructions if i.warp == warp)) for a in report.accesses]
    chosen = [(a, a.worst) for a in report.accesses if not a.conflict_free]
    return chosen or [(report.accesses[0], report.accesses[0].instructions[0])]


def run_occupancy(args: argparse.Namespace) -> int:
    # occupancy() checks threads, regs, smem, the carveout and the cluster size against the arch
    occ = occupancy(args.arch, args.threads, args.regs, args.smem, cluster=args.cluster,
                    carveout_kb=args.carveout, non_portable_cluster=args.non_portable)
    if args.json:
        print(json.dumps(render.occupancy_dict(occ), indent=2))
        return 0
    console = Console()
    show(console, render.occupancy_table(occ))
    console.print(f"limited by: {', '.join(occ.limiting)}")
    for note in occ.notes:
        console.print(f"note: {note}")
    return 0
