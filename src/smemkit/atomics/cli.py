"""``smemkit atomics profile|analyze|table``: is the shared-memory atomic unit the bottleneck?

``register(sub)`` adds the ``atomics`` command (the owner wires it into ``smemkit.cli.main``).

* ``profile [options] -- CMD ...`` runs CMD under Nsight Compute with exactly the metrics the
  model needs (``--clock-control none``), saves the report (``.ncu-rep`` and its CSV export), and
  prints per kernel: U per SM (min / median / max), the verdict and the evidence.
* ``analyze REPORT`` does the same from a saved CSV export (no GPU, no ncu) or a ``.ncu-rep``
  (needs ncu to export it).
* ``table`` prints the service-time table in force (measured, or the placeholder).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from smemkit.atomics.analysis import CLASS_VARIANTS, KernelAnalysis, analyze
from smemkit.atomics.kernels import PATTERNS
from smemkit.atomics.table import SCOPES, load_table
from smemkit.cli.tables import show
from smemkit.errors import InvalidArgumentError, ToolNotFoundError, check_int_range
from smemkit.hw import ncu
from smemkit.runtime.paths import find_tool


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("atomics", help="shared-memory atomic unit utilization (queueing model + Nsight "
                       "Compute counters)")
    actions = p.add_subparsers(dest="atomics_action", required=True, metavar="ACTION")

    def model_options(a: argparse.ArgumentParser) -> None:
        a.add_argument("--table", help="service table JSON (or a benchmarks results file); default: the "
                       "packaged H200 table, else the placeholder")
        a.add_argument("--pattern", choices=sorted(PATTERNS), help="address pattern of the kernel's "
                       "atomics, when known (default: estimate from wavefronts per instruction)")
        a.add_argument("--scope", choices=SCOPES, default="private",
                       help="whether warps share addresses (default: private)")
        a.add_argument("--variant", action="append", default=[], metavar="CLASS=VARIANT",
                       help=f"microbenchmark standing for a counter class (default: {CLASS_VARIANTS})")
        a.add_argument("--per-launch", action="store_true", help="one row per launch, not per kernel")
        a.add_argument("--json", action="store_true", help="print the analysis as JSON")

    pr = actions.add_parser("profile", help="run a command under Nsight Compute and analyze it")
    pr.add_argument("--out", default="atomics-profile", help="report path without extension "
                    "(writes OUT.ncu-rep and OUT.csv; default: ./atomics-profile)")
    pr.add_argument("--kernel", help="only kernels whose name matches this regex")
    pr.add_argument("--launch-skip", type=int, default=0, help="skip this many matching launches")
    pr.add_argument("--launch-count", type=int, help="profile at most this many launches")
    pr.add_argument("--ncu", help="path of the ncu executable (default: found on PATH / CUDA_HOME)")
    pr.add_argument("--print-command", action="store_true", help="print the ncu command and exit")
    model_options(pr)
    pr.add_argument("app", nargs=argparse.REMAINDER, help="-- the command to profile")
    pr.set_defaults(run=run_profile)

    an = actions.add_parser("analyze", help="analyze a saved Nsight Compute report (CSV or .ncu-rep)")
    an.add_argument("report", help="CSV from `ncu --import R --csv --page raw --print-units base "
                    "--print-metric-instances values`, or a .ncu-rep (needs ncu)")
    model_options(an)
    an.set_defaults(run=run_analyze)

    tb = actions.add_parser("table", help="show the service-time table in force")
    tb.add_argument("--table", help="service table JSON (or a benchmarks results file)")
    tb.add_argument("--variant", action="append", default=[], help="variants to show, e.g. add.int32.noret")
    tb.add_argument("--scope", choices=SCOPES, default="private")
    tb.add_argument("--json", action="store_true", help="print the shown curves as JSON")
    tb.set_defaults(run=run_table)


def _class_variants(items: list[str]) -> dict[str, str]:
    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in CLASS_VARIANTS:
            raise InvalidArgumentError(f"--variant {item!r}: expected CLASS=VARIANT with CLASS one of "
                                       f"{', '.join(CLASS_VARIANTS)}, e.g. alu=add.float32.noret")
        found[key] = value
    return found


def _report(results: list[KernelAnalysis], table, args: argparse.Namespace, console: Console) -> int:
    if args.json:
        print(json.dumps({"table": {"gpu": table.gpu, "source": table.source},
                          "kernels": [r.to_dict() for r in results]}, indent=2))
        return 0
    if not table.measured:
        console.print(f"[bold yellow]service table: {escape(table.gpu)} — {table.source}, NOT MEASURED; "
                      "verdicts are illustrative[/bold yellow]")
    t = Table(title="Shared-memory atomic unit (U = X * S per SM)")
    for col in ("kernel", "launches", "atomic warp inst", "wavefr./inst", "CAS %", "warps/SM",
                "S (cyc/inst)", "U min", "U median", "U max", "verdict"):
        t.add_column(col, justify="left" if col in ("kernel", "verdict") else "right")
    for r in results:
        def f(x, spec=".2f"):
            return "-" if x is None else format(x, spec)
        u = r.u_atom
        t.add_row(escape(r.kernel[:60]), str(r.launches), f"{sum(r.instructions.values()):,.0f}",
                  f(r.wavefronts_per_inst), f(100 * r.cas_fraction, ".1f"), f(r.warps_per_sm, ".1f"),
                  f(r.service_cycles), f(u and u.min), f(u and u.median), f(u and u.max),
                  escape(r.verdict.summary if r.verdict else "no shared atomics"))
    show(console, t, narrow="records")
    for r in results:
        if r.verdict is None and not r.notes:
            continue
        console.print(f"[bold]{escape(r.kernel)}[/bold]")
        for line in (r.verdict.evidence if r.verdict else ()):
            console.print(f"  {escape(line)}")
        if r.response_cycles is not None and r.response_cycles != float("inf"):
            console.print(f"  M/D/1 response at this utilization: {r.response_cycles:.1f} cycles per atomic")
        for note in r.notes:
            console.print(f"  [dim]{escape(note)}[/dim]")
    return 0


def run_analyze(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    records = ncu.read_report(args.report)
    results = analyze(records, table, per_launch=args.per_launch, pattern=args.pattern, scope=args.scope,
                      class_variants=_class_variants(args.variant))
    return _report(results, table, args, Console())


_PROFILING_RE = re.compile(r'==PROF==\s+Profiling\s+"(?P<name>[^"]+)"')


def run_profile(args: argparse.Namespace) -> int:
    check_int_range("--launch-skip", args.launch_skip, 0)
    if args.launch_count is not None:
        check_int_range("--launch-count", args.launch_count, 1)
    app = list(args.app)
    if app and app[0] == "--":
        app = app[1:]
    out = Path(args.out)
    rep, csv_path = out.with_suffix(".ncu-rep"), out.with_suffix(".csv")
    exe = args.ncu or find_tool("ncu") or "ncu"
    cmd = ncu.profile_command(app, rep, ncu=exe, kernel_regex=args.kernel, launch_skip=args.launch_skip,
                              launch_count=args.launch_count)
    if args.print_command:
        print(" ".join(cmd))
        return 0
    if args.ncu is None and find_tool("ncu") is None:
        raise ToolNotFoundError(
            "Nsight Compute's ncu was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): "
            "`smemkit atomics profile` needs it and a GPU. Pass --ncu PATH, or analyze a report saved "
            "elsewhere with `smemkit atomics analyze REPORT.csv` (no GPU needed)"
        )
    table = load_table(args.table)  # fail early on a bad table, before a long profile
    console = Console(stderr=True)
    profiled = 0
    with console.status("starting Nsight Compute ...") as status:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            m = _PROFILING_RE.search(line)
            if m:
                profiled += 1
                status.update(f"profiling launch {profiled}: {escape(m.group('name')[:70])}")
            elif line.startswith("==PROF==") or line.startswith("==ERROR=="):
                console.print(f"[dim]{escape(line)}[/dim]")
            else:
                console.print(escape(line), highlight=False)
        rc = proc.wait()
    if not rep.is_file():
        raise ToolNotFoundError(f"ncu exited with status {rc} and wrote no report {rep}")
    console.print(f"[dim]{profiled} launches profiled; report {rep}; exporting {csv_path}[/dim]")
    export = subprocess.run(ncu.import_command(rep, ncu=exe), capture_output=True, text=True, timeout=600)
    if export.returncode != 0:
        raise ToolNotFoundError(f"ncu --import failed: {export.stderr.strip()[:500]}")
    csv_path.write_text(export.stdout)
    records = ncu.parse_csv(export.stdout)
    results = analyze(records, table, per_launch=args.per_launch, pattern=args.pattern, scope=args.scope,
                      class_variants=_class_variants(args.variant))
    return _report(results, table, args, Console())


def run_table(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    console = Console()
    variants = args.variant or ["add.int32.noret", "inc.int32.noret", "add.float32.noret", "cas.int32.ret"]
    shown = {}
    for v in variants:
        shown[v] = [c for c in table.curves.values() if c.variant == v and c.scope == args.scope]
        if not shown[v]:
            raise InvalidArgumentError(f"no curves for {v} ({args.scope}); the table has "
                                       f"{', '.join(table.variants()[:12])} ...")
    if args.json:
        print(json.dumps({"gpu": table.gpu, "source": table.source, "measured": table.measured,
                          "scope": args.scope,
                          "curves": [c.to_dict() for v in variants for c in shown[v]]}, indent=2))
        return 0
    flag = "" if table.measured else ", NOT MEASURED"
    console.print(f"service table: {escape(table.gpu)} ({table.source}{flag})")
    for v, curves in shown.items():
        sass = curves[0].sass or "?"
        t = Table(title=f"S(n) cycles per warp instruction: {v} ({args.scope}, SASS: {sass})")
        t.add_column("pattern")
        t.add_column("wavefr.", justify="right")
        for n in curves[0].n:
            t.add_column(f"n={n}", justify="right")
        for c in curves:
            t.add_row(c.pattern, f"{c.wavefronts:g}", *(f"{s:.1f}" for s in c.cycles))
        show(console, t)
    return 0
