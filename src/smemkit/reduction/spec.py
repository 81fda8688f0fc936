"""Declarative specs of reduction-reuse workloads (CREDIT, paper Eq. 1-2).

A workload reduces each row of width N to per-row statistics in L stages (a stage may use the
statistics of earlier stages), then reuses every element to write full-size outputs. From one
:class:`ReductionSpec` smemkit derives the float64 reference (:mod:`.reference`), the byte
accounting of the cost model (:meth:`ReductionSpec.bytes`, paper Table III) and the CUDA source
of every kernel variant (:mod:`.codegen`).

Names visible to expressions:
- per element: row ``inputs``, ``columns`` (indexed by column), ``lets`` (per-element values),
  earlier ``outputs``;
- per row: ``row_inputs``, ``scalars`` (hyper-parameters), the float ``N``, and the statistics
  and derived values of the stages completed so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import expr

ReduceOp = Literal["sum", "max", "min", "scan", "median"]
KERNEL_OPS = ("sum", "max", "min")
# Expressible so the cost model can reject them by construction (paper §III-D), never compiled:
# "scan" is a per-element running sum (ordered dependencies), "median" a selection.
ANALYSIS_OPS = ("scan", "median")
OUTPUT_BYTES = {"float32": 4, "int8": 1}
INPUT_BYTES = 4  # float32 rows
# Identifiers the generated kernels (and C++/CUDA) use themselves.
RESERVED = frozenset({
    "M", "P", "Nf", "THREADS", "NWARPS", "QMAX", "red", "slots", "bars", "stage_buf",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "int", "float", "double", "char",
    "bool", "void", "const", "if", "else", "for", "while", "do", "return", "auto", "signed",
    "unsigned", "long", "short", "static", "struct", "class", "template", "typename", "true",
    "false", "switch", "case", "break", "continue", "default", "sizeof", "u32", "u64", "smemkit",
    "min", "max", "abs", "exp", "log", "sqrt", "rsqrt", "round", "isnan",
})


@dataclass(frozen=True)
class Stat:
    """One statistic: ``op`` over the row of the per-element expression ``expr``."""

    name: str
    op: ReduceOp
    expr: str


@dataclass(frozen=True)
class Stage:
    """Statistics reduced together (one exchange), then per-row values derived from them."""

    stats: tuple[Stat, ...]
    derive: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Output:
    """A full-size (M, N) output and its per-element expression."""

    name: str
    expr: str
    dtype: Literal["float32", "int8"] = "float32"


@dataclass(frozen=True)
class ByteAccounting:
    """Bytes per element for the cost model (paper Table III)."""

    compulsory: int  # each input read once, each output written once
    keep: int  # b_keep: staged in shared memory by the staged/cluster kernels
    baseline: int  # b_B: moved by the global re-read kernel (one pass per stage + output pass)
    stats_per_stage: tuple[int, ...]  # q_l

    @property
    def reread(self) -> int:
        """b_reread: re-read bytes the staged kernels avoid."""
        return self.baseline - self.compulsory

    @property
    def stages(self) -> int:
        return len(self.stats_per_stage)


@dataclass(frozen=True)
class ReductionSpec:
    """A reduction-reuse workload. See the module docstring for the names expressions may use."""

    name: str
    inputs: tuple[str, ...]
    stages: tuple[Stage, ...]
    outputs: tuple[Output, ...]
    columns: tuple[str, ...] = ()
    row_inputs: tuple[str, ...] = ()
    scalars: tuple[tuple[str, float | None], ...] = ()
    lets: tuple[tuple[str, str], ...] = ()
    row_outputs: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        validate(self)

    # ---- names --------------------------------------------------------------------------
    @property
    def scalar_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.scalars)

    def let_closure(self, text: str) -> list[str]:
        """Lets an expression needs, transitively, in definition order."""
        defs = dict(self.lets)
        needed: set[str] = set()
        stack = list(expr.names(text))
        while stack:
            name = stack.pop()
            if name in defs and name not in needed:
                needed.add(name)
                stack.extend(expr.names(defs[name]))
        return [n for n, _ in self.lets if n in needed]

    def inputs_used(self, texts: list[str]) -> list[str]:
        """Row inputs the expressions read, directly or through lets (spec order)."""
        used: set[str] = set()
        for text in texts:
            used |= expr.names(text)
            for let in self.let_closure(text):
                used |= expr.names(dict(self.lets)[let])
        return [n for n in self.inputs if n in used]

    @cached_property
    def pass_inputs(self) -> tuple[tuple[str, ...], ...]:
        """Inputs read by each pass of the re-read kernel: one per stage, then the output pass."""
        passes = [self.inputs_used([s.expr for s in stage.stats]) for stage in self.stages]
        passes.append(self.inputs_used([o.expr for o in self.outputs]))
        return tuple(tuple(p) for p in passes)

    @cached_property
    def read_inputs(self) -> tuple[str, ...]:
        """Inputs some pass reads, in spec order: what a ``regs`` kernel holds in registers."""
        return tuple(n for n in self.inputs if any(n in p for p in self.pass_inputs))

    @cached_property
    def staged_inputs(self) -> tuple[str, ...]:
        """Inputs read by two or more passes: what staged kernels keep in shared memory."""
        counts = {n: sum(n in p for p in self.pass_inputs) for n in self.inputs}
        return tuple(n for n in self.inputs if counts[n] >= 2)

    @cached_property
    def staged_late(self) -> tuple[str, ...]:
        """Staged inputs the first pass does not read. When there are any, the staged and cluster
        kernels (not their two-buffer ``prefetch`` forms) give each staged input its own staging
        barrier and issue these copies last, so the first pass and its exchange run while they
        still arrive (codegen.generate; layernorm_bwd's dy)."""
        return tuple(n for n in self.staged_inputs if n not in self.pass_inputs[0])

    @cached_property
    def kernel_support(self) -> str | None:
        """None when smemkit can generate kernels for the spec, else why not."""
        ops = {s.op for st in self.stages for s in st.stats}
        if "scan" in ops:
            return ("a scan: each element depends on all before it (ordered dependencies), so "
                    "exchanges grow with the slices instead of staying one per stage")
        if "median" in ops:
            return "a selection: the state CTAs must exchange grows with N, not with the statistics"
        texts = [s.expr for st in self.stages for s in st.stats] + [t for _, t in self.lets]
        if any("shift" in expr.called(t) for t in texts + [o.expr for o in self.outputs]):
            return "a stencil: elements read their neighbours across slice boundaries"
        return None

    @cached_property
    def bytes(self) -> ByteAccounting:
        out_bytes = sum(OUTPUT_BYTES[o.dtype] for o in self.outputs)
        return ByteAccounting(
            compulsory=INPUT_BYTES * len(self.inputs) + out_bytes,
            keep=INPUT_BYTES * len(self.staged_inputs),
            baseline=INPUT_BYTES * sum(len(p) for p in self.pass_inputs) + out_bytes,
            stats_per_stage=tuple(len(s.stats) for s in self.stages),
        )


def _check_types(spec: ReductionSpec) -> None:
    """Each field of ``spec`` has the shape the dataclasses document (tuples of names, of
    (name, expression) pairs, of Stage/Stat/Output), so a mistyped spec is named, not a crash."""
    if not isinstance(spec.name, str) or not spec.name:
        raise InvalidArgumentError(f"workload spec: name must be a non-empty string, got {spec.name!r}")
    where = f"workload spec '{spec.name}'"

    def strings(label: str, value) -> None:
        if isinstance(value, str) or not isinstance(value, (tuple, list)) or \
                not all(isinstance(v, str) for v in value):
            raise InvalidArgumentError(f"{where}: {label} must be a tuple of names, got {value!r}")

    def pairs(label: str, value, second: tuple[type, ...], what: str) -> None:
        if not isinstance(value, (tuple, list)) or not all(
                isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str)
                and isinstance(p[1], second) and not isinstance(p[1], bool) for p in value):
            raise InvalidArgumentError(f"{where}: {label} must be a tuple of (name, {what}) pairs, "
                                       f"got {value!r}")

    for label in ("inputs", "columns", "row_inputs"):
        strings(label, getattr(spec, label))
    pairs("scalars", spec.scalars, (int, float, type(None)), "default number or None")
    pairs("lets", spec.lets, (str,), "expression")
    pairs("row_outputs", spec.row_outputs, (str,), "expression")
    if not isinstance(spec.description, str):
        raise InvalidArgumentError(f"{where}: description must be a string")
    if not isinstance(spec.stages, (tuple, list)) or not all(isinstance(st, Stage) for st in spec.stages):
        raise InvalidArgumentError(f"{where}: stages must be a tuple of Stage objects")
    for index, stage in enumerate(spec.stages, start=1):
        if not isinstance(stage.stats, (tuple, list)) or not all(
                isinstance(st, Stat) and all(isinstance(getattr(st, f), str) for f in ("name", "op", "expr"))
                for st in stage.stats):
            raise InvalidArgumentError(f"{where}: stage {index}: stats must be Stat(name, op, expr) "
                                       "objects with string fields")
        pairs(f"stage {index} derive", stage.derive, (str,), "expression")
    if not isinstance(spec.outputs, (tuple, list)) or not all(
            isinstance(o, Output) and isinstance(o.name, str) and isinstance(o.expr, str)
            for o in spec.outputs):
        raise InvalidArgumentError(f"{where}: outputs must be Output(name, expr, dtype) objects")


def validate(spec: ReductionSpec) -> None:
    """Every name defined once and used only where it is available; raises InvalidArgumentError."""
    _check_types(spec)
    where = f"workload spec '{spec.name}'"
    declared = [*spec.inputs, *spec.columns, *spec.row_inputs, *spec.scalar_names,
                *(n for n, _ in spec.lets), *(o.name for o in spec.outputs),
                *(s.name for st in spec.stages for s in st.stats),
                *(n for st in spec.stages for n, _ in st.derive), *(n for n, _ in spec.row_outputs)]
    dupes = sorted({n for n in declared if declared.count(n) > 1})
    if dupes:
        raise InvalidArgumentError(f"{where}: names defined more than once: {dupes}")
    bad = sorted(n for n in declared if not n.isidentifier() or n.startswith(("_", "p_", "s_")))
    if bad:
        raise InvalidArgumentError(f"{where}: names must be identifiers not starting with '_', "
                                   f"'p_' or 's_' (reserved for generated code): {bad}")
    if "N" in declared:
        raise InvalidArgumentError(f"{where}: 'N' is reserved for the row width")
    clash = sorted(n for n in declared if n in RESERVED or re.fullmatch(r"acc\d+_\d+", n))
    if clash:
        raise InvalidArgumentError(f"{where}: names {clash} are reserved by the generated CUDA code")
    if not spec.inputs or not spec.stages or not (spec.outputs or spec.row_outputs):
        raise InvalidArgumentError(f"{where}: needs at least one input, one stage and one output")
    element = {*spec.inputs, *spec.columns, *(n for n, _ in spec.lets)}
    row = {*spec.row_inputs, *spec.scalar_names, "N"}

    def check(text: str, allowed: set[str], what: str) -> None:
        missing = expr.names(text) - allowed
        if missing:
            raise InvalidArgumentError(
                f"{where}: {what} = {text!r} uses {sorted(missing)}, not available there"
            )

    let_names = {n for n, _ in spec.lets}
    for stage_index, stage in enumerate(spec.stages, start=1):
        for stat in stage.stats:
            if stat.op not in KERNEL_OPS + ANALYSIS_OPS:
                raise InvalidArgumentError(f"{where}: stat {stat.name} has op {stat.op!r}; "
                                           f"allowed: {', '.join(KERNEL_OPS + ANALYSIS_OPS)}")
            check(stat.expr, element | row, f"stage {stage_index} stat {stat.name}")
            for let in spec.let_closure(stat.expr):
                check(dict(spec.lets)[let], element | row, f"let {let} (needed in stage {stage_index})")
        row |= {s.name for s in stage.stats if s.op != "scan"}
        element |= {s.name for s in stage.stats if s.op == "scan"}  # a running value per element
        for name, text in stage.derive:
            check(text, row, f"stage {stage_index} derived {name}")
            row.add(name)
    for name, text in spec.lets:
        check(text, element | row | let_names, f"let {name}")
    for out in spec.outputs:
        if out.dtype not in OUTPUT_BYTES:
            raise InvalidArgumentError(f"{where}: output {out.name} dtype {out.dtype!r}; "
                                       f"allowed: {', '.join(OUTPUT_BYTES)}")
        check(out.expr, element | row, f"output {out.name}")
        element.add(out.name)
    for name, text in spec.row_outputs:
        check(text, row, f"row output {name}")
