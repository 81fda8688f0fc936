"""Nsight Compute: the metrics the atomics model needs, the command lines, and CSV parsing.

The layout, as the H200 report in ``tests/data/atomics_hist_ncu.csv`` (Nsight Compute 2025.3.1)
has it and the parser checks:

* ``ncu --import R.ncu-rep --csv --page raw --print-units base --print-metric-instances values``
  prints a header row ``"ID","Process ID","Process Name","Host Name","Kernel Name","Context",
  "Stream","Block Size","Grid Size","Device","CC",<metric>...``, then a units row (identity cells
  empty), then one row per profiled launch, every field quoted and every row as long as the
  header. Columns are found by name, and every column whose name contains ``__`` is a metric.
* ``--page details --csv`` prints the long form (one row per metric, columns "Metric Name",
  "Metric Unit", "Metric Value"); both are accepted.
* Numbers may carry thousands separators (``"1,234,567"``); ``n/a`` and empty mean missing.
* A metric with instance values prints ``AGGREGATE (v1;v2;...)``; the parser also accepts the
  bare ``(v1;v2;...)`` form. ``sm__cycles_active`` and the ``l1tex__`` counters carry no per-SM
  instances on the H200, so the analysis works from their ``.min``/``.max``/``.sum`` rollups.
* ``smsp__inst_executed_op_shared_atom.sum`` is the total of its ``_dot_alu`` and ``_dot_cas``
  variants on the H200; the analysis detects that (atom == alu + cas) and does not add them.

A report that breaks the layout (a row shorter or longer than the header, an unterminated quote,
text where one of :data:`NUMERIC_METRICS` needs a number) is an InvalidArgumentError naming the
line and the metric: a damaged report must not read as a kernel without atomics.
"""

from __future__ import annotations

import csv
import math
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from smemkit.errors import InvalidArgumentError, ToolNotFoundError
from smemkit.inputs import existing_file, read_text
from smemkit.runtime.paths import find_tool

INST_ATOM = "smsp__inst_executed_op_shared_atom.sum"
INST_ALU = "smsp__inst_executed_op_shared_atom_dot_alu.sum"
INST_CAS = "smsp__inst_executed_op_shared_atom_dot_cas.sum"
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
CYCLES = "sm__cycles_active"
WARPS_ACTIVE = "sm__warps_active.avg.per_cycle_active"
DURATION = "gpu__time_duration.sum"
SM_COUNT = "device__attribute_multiprocessor_count"
CLOCK_RATE = "device__attribute_clock_rate"  # kHz: the SM clock the cycle counters can reach

# Other units' utilization, percent of peak (names as in NVIDIA's nvprof-to-ncu mapping:
# issue_slot_utilization, ldst_fu_utilization, shared_utilization, l2_utilization, dram_utilization).
OTHER_UNITS = {
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "lsu": "smsp__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "shared": "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "l2": "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
}

# Exactly what `smemkit atomics profile` collects (rollups over SM units: .min/.max/.avg/.sum).
PROFILE_METRICS: tuple[str, ...] = (
    INST_ATOM, INST_ALU, INST_CAS,
    f"{WAVEFRONTS}.sum", f"{WAVEFRONTS}.min", f"{WAVEFRONTS}.max",
    CONFLICTS,
    f"{CYCLES}.sum", f"{CYCLES}.avg", f"{CYCLES}.min", f"{CYCLES}.max",
    WARPS_ACTIVE, DURATION,
    *OTHER_UNITS.values(),
)

# The metrics smemkit reads: text in one of them is damage, not a text-valued metric.
NUMERIC_METRICS = frozenset((*PROFILE_METRICS, SM_COUNT, CLOCK_RATE))

_IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
             "Block Size", "Grid Size", "Device", "CC")
_TIME_TO_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
               "second": 1e9, "s": 1e9}
_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
# digits with optional thousands separators (1,234,567), an optional fraction and exponent
_MISSING = frozenset(("", "n/a", "N/A", "-", "nan"))
_INSTANCES = re.compile(r"(?P<agg>[^()]*?)\s*\((?P<inst>[^()]*)\)")
_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?$|^[-+]?\.\d+([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class MetricValue:
    value: float | None
    unit: str = ""
    instances: tuple[float, ...] | None = None


@dataclass
class LaunchRecord:
    """One profiled kernel launch."""

    id: str
    kernel: str
    block: str = ""
    grid: str = ""
    device: str = ""
    cc: str = ""
    metrics: dict[str, MetricValue] = field(default_factory=dict)

    def value(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return None if m is None else m.value

    def instances(self, name: str) -> tuple[float, ...] | None:
        m = self.metrics.get(name)
        return None if m is None else m.instances


def parse_number(text: str) -> float | None:
    """``"1,234.5"`` -> 1234.5; ``n/a``/empty -> None; raises on anything else."""
    t = text.strip()
    if t in _MISSING:
        return None
    if not _NUMBER.match(t):
        raise InvalidArgumentError(f"not a number in the Nsight Compute CSV: {text!r}")
    value = float(t.replace(",", "") if "," in t else t)
    if not math.isfinite(value):
        raise InvalidArgumentError(f"not a finite number in the Nsight Compute CSV: {text!r}")
    return value


def parse_cell(text: str) -> tuple[float | None, tuple[float, ...] | None]:
    """A metric cell: ``"123"``, ``"123 (1;2;3)"`` or ``"(1;2;3)"`` -> (aggregate, instances)."""
    t = text.strip()
    m = _INSTANCES.fullmatch(t) if "(" in t else None
    if not m:
        return parse_number(t), None
    inst = tuple(v for v in (parse_number(x) for x in m.group("inst").split(";") if x.strip())
                 if v is not None)
    agg = parse_number(m.group("agg")) if m.group("agg").strip() else None
    return agg, inst


_COUNT_UNITS = ("byte", "inst", "cycle", "sector")


def unit_factor(unit: str) -> tuple[float, str]:
    """(factor, base unit): times to nanoseconds, K/M/G/T-prefixed bytes and counts to base units."""
    u = unit.strip()
    if u in _TIME_TO_NS:
        return _TIME_TO_NS[u], "nsecond"
    if len(u) > 1 and u[0] in _SCALE and u[1:] in _COUNT_UNITS:
        return _SCALE[u[0]], u[1:]
    if u in _COUNT_UNITS or u in ("", "%", "warp", "thread", "request", "wavefront", "block"):
        return 1.0, u
    # an unknown or rate unit (Gbyte/second, cycle/nsecond, ...): refuse rather than mis-scale
    raise InvalidArgumentError(f"unit {u!r} in the Nsight Compute CSV is not one smemkit converts; "
                               "export with --print-units base")


def _metric(text: str, unit: str) -> MetricValue:
    agg, inst = parse_cell(text)
    factor, base = unit_factor(unit)
    return MetricValue(None if agg is None else agg * factor, base,
                       None if inst is None else tuple(v * factor for v in inst))


def _csv_rows(text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of the CSV rows from the first header line on (skips ==PROF== lines
    and program output); an unterminated quote or stray character is an error naming the line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise InvalidArgumentError(
            "no Nsight Compute CSV header (a line starting with \"ID\") found: export with "
            "`ncu --import REPORT --csv --page raw --print-units base --print-metric-instances values`"
        )
    rows = []
    for number, line in enumerate(lines[start:], start=start + 1):
        if line.startswith("=="):
            continue
        try:
            fields = next(csv.reader([line], strict=True), [])
        except csv.Error as exc:
            raise InvalidArgumentError(f"the Nsight Compute CSV is damaged at line {number} ({exc}): "
                                       "truncated or edited; export the report again") from None
        rows.append((number, fields))
    return rows


def _short_row(number: int, fields: list[str], width: int) -> InvalidArgumentError:
    return InvalidArgumentError(f"line {number} of the Nsight Compute CSV has {len(fields)} fields, the "
                                f"header {width}: the report is truncated or damaged; export it again")


def _read_metric(rec: LaunchRecord, name: str, text: str, unit: str, number: int) -> None:
    """Store one metric cell; text in a metric smemkit reads is an error, in any other metric
    (names, enums, a unit smemkit does not convert) it is left out."""
    try:
        rec.metrics[name] = _metric(text, unit)
    except InvalidArgumentError as exc:
        if name in NUMERIC_METRICS:
            raise InvalidArgumentError(f"line {number} of the Nsight Compute CSV (launch {rec.id}, "
                                       f"{rec.kernel[:40]}): metric {name}: {exc}") from None


def parse_csv(text: str) -> list[LaunchRecord]:
    """Launch records from ncu CSV output (raw-page wide form or details-page long form)."""
    rows = _csv_rows(text)
    _, header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    missing = [c for c in ("ID", "Kernel Name") if c not in col]
    if missing:
        raise InvalidArgumentError(f"the CSV header lacks columns {missing}: {header[:12]}")
    records: dict[str, LaunchRecord] = {}

    def record_for(row: list[str]) -> LaunchRecord:
        rid = row[col["ID"]]
        if rid not in records:
            def get(name: str) -> str:
                return row[col[name]] if name in col else ""
            records[rid] = LaunchRecord(rid, get("Kernel Name"), get("Block Size"), get("Grid Size"),
                                        get("Device"), get("CC"))
        return records[rid]

    body = [(n, row) for n, row in rows[1:] if any(c.strip() for c in row)]
    for number, row in body:
        if len(row) != len(header):
            raise _short_row(number, row, len(header))
    if "Metric Name" in col and "Metric Value" in col:
        for number, row in body:
            name = row[col["Metric Name"]].strip()
            if not row[col["ID"]].strip() or not name:
                continue
            unit = row[col["Metric Unit"]] if "Metric Unit" in col else ""
            _read_metric(record_for(row), name, row[col["Metric Value"]], unit, number)
        return list(records.values())

    metric_cols = [(i, name) for i, name in enumerate(header) if "__" in name and name not in _IDENTITY]
    units = [""] * len(header)
    for number, row in body:
        if not row[col["ID"]].strip():  # the units row
            units = row
            continue
        rec = record_for(row)
        for i, name in metric_cols:
            _read_metric(rec, name, row[i], units[i], number)
    return list(records.values())


def read_report(path: str | Path, *, ncu: str | None = None) -> list[LaunchRecord]:
    """Records from a CSV file, or from a ``.ncu-rep`` through ``ncu --import`` (needs ncu)."""
    p = Path(path)
    if existing_file(p) is None:
        raise InvalidArgumentError(f"report {p} does not exist (give a CSV export or a .ncu-rep file)")
    if p.suffix == ".ncu-rep":
        exe = ncu or find_tool("ncu")
        if exe is None:
            raise ToolNotFoundError(
                f"{p} is a binary Nsight Compute report and ncu is not installed here; export it "
                f"where ncu is: {' '.join(import_command(p))} > report.csv"
            )
        proc = subprocess.run(import_command(p, ncu=exe), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ToolNotFoundError(f"ncu --import failed: {proc.stderr.strip()[:500]}")
        return parse_csv(proc.stdout)
    return parse_csv(read_text(p, "Nsight Compute report"))


def profile_command(app: Sequence[str], report: str | Path, *, ncu: str = "ncu",
                    kernel_regex: str | None = None, launch_skip: int = 0,
                    launch_count: int | None = None,
                    metrics: Sequence[str] = PROFILE_METRICS) -> list[str]:
    """``ncu`` collecting exactly ``metrics`` (default: the atomics model's), clocks left
    alone, into ``report``."""
    if not app:
        raise InvalidArgumentError("no command to profile: give it after `--`, e.g. "
                                   "smemkit atomics profile -- python train.py")
    cmd = [ncu, "--metrics", ",".join(metrics), "--clock-control", "none",
           "--target-processes", "all", "--export", str(report), "--force-overwrite"]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    return cmd + list(app)


def import_command(report: str | Path, *, ncu: str = "ncu") -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base",
            "--print-metric-instances", "values"]
