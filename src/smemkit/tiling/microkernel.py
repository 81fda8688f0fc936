"""CUDA microkernels that perform exactly a pattern's shared-memory accesses, for checking the model.

``generate(pattern)`` turns a :class:`~smemkit.tiling.pattern.Pattern` into the source of one
``extern "C"`` kernel, launched as ONE block of the pattern's block shape, whose only shared-memory
traffic is the pattern's: every (access, loop values) pair becomes one straight-line statement
(the loops are unrolled by the generator, in the analyzer's order), issued with inline PTX
``ld.volatile.shared`` / ``st.volatile.shared`` of the access width (``.b16``, ``.b32``,
``.v2.b32``, ``.v4.b32``), so the compiler can neither drop, merge nor widen them. Loaded values
are summed into a register written to global memory; stores write distinct values. Shared memory
is never initialised (the values read do not matter, only the addresses), so nothing else touches
it: the Nsight Compute shared-memory counters of the kernel are the pattern's alone.

Addresses. Where every index and predicate is a string expression and each array's transform is
``None`` or a :class:`~smemkit.tiling.swizzle.Swizzle` (``mode="expr"``), the byte offset is
computed in C++ from the expressions (translated node by node with Python's ``//``/``%``
semantics), the padded row-major strides and the swizzle. Otherwise (``mode="table"``: Python
callables, other transforms) the kernel reads each thread's offset from a table the host computes
with the analyzer. Either way the kernel also writes every offset it used to a ``trace`` buffer, so
a run can check that the hardware saw exactly the addresses the model analyzed; the per-access
offset functions are ``__host__ __device__`` and :func:`host_check_source` builds a C++ program
that prints them, for a check with a host compiler on machines without a GPU.

Kernel signature: ``(unsigned* out, int* trace, const int* table)``; ``out`` holds ``threads + 1``
words (the per-thread sums, then the block's shared-window base address), ``trace`` holds
``slots * threads`` ints (offset, or -1 for an inactive lane), ``table`` is ignored in expr mode.
Launch with :attr:`MicroKernel.smem_bytes` of dynamic shared memory.

:func:`validation_suite` is the set of patterns the H200 validation runs
(``benchmarks/tiling_validate.py``): the built-in examples and their padded/swizzled fixes, strided
row/column accesses (strides 1..33) in fp16/fp32/fp64, 64- and 128-bit vectors, broadcasts,
partial warps and predicated lanes, loads and stores.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from smemkit.errors import InvalidArgumentError
from smemkit.tiling import expr
from smemkit.tiling.banks import WARP
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.pattern import Access, Pattern, PatternReport, address, analyze, trace
from smemkit.tiling.swizzle import Swizzle

KERNEL_PREFIX = "smk_tiling_"
BASELINE_KERNEL = KERNEL_PREFIX + "baseline"
OPS = ("load", "store")

PRELUDE = r"""// smemkit.tiling.microkernel prelude: Python integer semantics and shared-memory accessors.
#ifndef SMK_TILING_PRELUDE
#define SMK_TILING_PRELUDE
#if defined(__CUDACC__)
#define SMK_HD __host__ __device__ __forceinline__
#else
#define SMK_HD inline
#endif
SMK_HD int smk_floordiv(int a, int b) {
  const int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
SMK_HD int smk_mod(int a, int b) {
  const int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
SMK_HD int smk_min(int a, int b) { return a < b ? a : b; }
SMK_HD int smk_max(int a, int b) { return a > b ? a : b; }
SMK_HD int smk_abs(int a) { return a < 0 ? -a : a; }
#if defined(__CUDACC__)
__device__ __forceinline__ unsigned int smk_ld16(unsigned int a) {
  unsigned short h; asm volatile("ld.volatile.shared.b16 %0, [%1];" : "=h"(h) : "r"(a)); return h;
}
__device__ __forceinline__ unsigned int smk_ld32(unsigned int a) {
  unsigned int x; asm volatile("ld.volatile.shared.b32 %0, [%1];" : "=r"(x) : "r"(a)); return x;
}
__device__ __forceinline__ unsigned int smk_ld64(unsigned int a) {
  unsigned int x, y;
  asm volatile("ld.volatile.shared.v2.b32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "r"(a));
  return x + y;
}
__device__ __forceinline__ unsigned int smk_ld128(unsigned int a) {
  unsigned int x, y, z, w;
  asm volatile("ld.volatile.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a));
  return x + y + z + w;
}
__device__ __forceinline__ void smk_st16(unsigned int a, unsigned int v) {
  asm volatile("st.volatile.shared.b16 [%0], %1;" :: "r"(a), "h"((unsigned short)v));
}
__device__ __forceinline__ void smk_st32(unsigned int a, unsigned int v) {
  asm volatile("st.volatile.shared.b32 [%0], %1;" :: "r"(a), "r"(v));
}
__device__ __forceinline__ void smk_st64(unsigned int a, unsigned int v) {
  asm volatile("st.volatile.shared.v2.b32 [%0], {%1, %2};" :: "r"(a), "r"(v), "r"(v + 1u));
}
__device__ __forceinline__ void smk_st128(unsigned int a, unsigned int v) {
  asm volatile("st.volatile.shared.v4.b32 [%0], {%1, %2, %3, %4};"
               :: "r"(a), "r"(v), "r"(v + 1u), "r"(v + 2u), "r"(v + 3u));
}
#endif
#endif  // SMK_TILING_PRELUDE
"""

BASELINE_SOURCE = r"""
#if defined(__CUDACC__)
// Baseline: the microkernels' frame (thread ids, trace and result writes) with no shared access.
extern "C" __global__ void __launch_bounds__(256) smk_tiling_baseline(
    unsigned int* __restrict__ out, int* __restrict__ trace, const int* __restrict__ table) {
  extern __shared__ __align__(1024) unsigned char smk_smem[];
  const unsigned int sbase = static_cast<unsigned int>(__cvta_generic_to_shared(smk_smem));
  const int tid = threadIdx.x;
  trace[tid] = tid * 4;
  out[tid] = 0u;
  if (tid == 0) out[256] = sbase;
}
#endif
"""
BASELINE_BLOCK = (256, 1, 1)


# --------------------------------------------------------------------------------------------
# Predictions


@dataclass(frozen=True)
class OpPrediction:
    """Totals of one op (load or store) over the pattern's warp instructions."""

    wavefronts: int = 0
    ideal: int = 0
    instructions: int = 0  # warp instructions with at least one active lane
    instructions_all: int = 0  # every (warp, loop values) pair, active lanes or not

    def as_dict(self) -> dict:
        return {"wavefronts": self.wavefronts, "ideal": self.ideal, "instructions": self.instructions,
                "instructions_all": self.instructions_all}


@dataclass(frozen=True)
class Prediction:
    """The analyzer's totals per op for one launch of one block of the pattern."""

    by_op: Mapping[str, OpPrediction]

    @property
    def wavefronts(self) -> int:
        return sum(p.wavefronts for p in self.by_op.values())

    @property
    def ideal(self) -> int:
        return sum(p.ideal for p in self.by_op.values())

    @property
    def instructions(self) -> int:
        return sum(p.instructions for p in self.by_op.values())

    @property
    def instructions_all(self) -> int:
        return sum(p.instructions_all for p in self.by_op.values())

    def as_dict(self) -> dict:
        return {op: self.by_op[op].as_dict() for op in OPS}


def prediction_of(report: PatternReport) -> Prediction:
    totals = {op: [0, 0, 0, 0] for op in OPS}
    for ar in report.accesses:
        t = totals[ar.access.op]
        t[0] += ar.wavefronts
        t[1] += ar.ideal
        t[2] += sum(1 for i in ar.instructions if i.result.active_lanes)
        t[3] += len(ar.instructions)
    return Prediction({op: OpPrediction(*t) for op, t in totals.items()})


def predict(pattern: Pattern) -> Prediction:
    """Sum over the pattern's warp instructions of the analyzer's wavefronts, per op."""
    return prediction_of(analyze(pattern))


# --------------------------------------------------------------------------------------------
# Expression translation (Python integer semantics in C++)

_C_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.LShift: "<<", ast.RShift: ">>",
             ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_C_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def c_name(name: str) -> str:
    """The C++ variable that holds the pattern variable ``name``."""
    return f"v_{name}"


def _to_c(node: ast.expr, names: set[str], text: str) -> str:
    if isinstance(node, ast.Constant):
        return str(int(node.value))
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise InvalidArgumentError(f"index expression {text!r} reads {node.id!r}; known "
                                       f"variables: {', '.join(sorted(names))}")
        return c_name(node.id)
    if isinstance(node, ast.BinOp):
        left, right = _to_c(node.left, names, text), _to_c(node.right, names, text)
        if isinstance(node.op, ast.FloorDiv):
            return f"smk_floordiv({left}, {right})"
        if isinstance(node.op, ast.Mod):
            return f"smk_mod({left}, {right})"
        return f"({left} {_C_BINOPS[type(node.op)]} {right})"
    if isinstance(node, ast.UnaryOp):
        value = _to_c(node.operand, names, text)
        op = {ast.Not: "!", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        return f"({op}{value})"
    if isinstance(node, ast.Compare):
        parts, left = [], _to_c(node.left, names, text)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _to_c(comp, names, text)
            parts.append(f"({left} {_C_CMPOPS[type(op)]} {right})")
            left = right
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
    if isinstance(node, ast.BoolOp):
        # smemkit.tiling.expr evaluates and/or as all()/any(): a bool, like C's && and ||.
        joiner = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joiner.join(f"({_to_c(v, names, text)})" for v in node.values) + ")"
    if isinstance(node, ast.IfExp):
        return (f"(({_to_c(node.test, names, text)}) ? {_to_c(node.body, names, text)} : "
                f"{_to_c(node.orelse, names, text)})")
    if isinstance(node, ast.Call):
        args = [_to_c(a, names, text) for a in node.args]
        fn = node.func.id
        if fn == "abs":
            if len(args) != 1:
                raise InvalidArgumentError(f"index expression {text!r}: abs() takes one argument")
            return f"smk_abs({args[0]})"
        if not args:
            raise InvalidArgumentError(f"index expression {text!r}: {fn}() needs arguments")
        out = args[0]
        for a in args[1:]:
            out = f"smk_{fn}({out}, {a})"
        return out
    raise InvalidArgumentError(f"index expression {text!r}: {type(node).__name__} cannot be "
                               "translated to C++ here")


def expr_to_c(text: str, names: Sequence[str]) -> list[str]:
    """C++ expressions for a string index/predicate: one per component (a tuple gives several)."""
    body = expr.parse(text).body
    items = body.elts if isinstance(body, ast.Tuple) else [body]
    for item in items:
        if isinstance(item, ast.Tuple):
            raise InvalidArgumentError(f"index expression {text!r}: nested tuples are not indices")
    return [_to_c(item, set(names), text) for item in items]


def _transform_c(layout: SmemLayout, var: str) -> str:
    t = layout.transform
    if t is None:
        return var
    mask = (1 << t.B) - 1
    if t.S >= 0:
        return f"({var} ^ (({var} & {mask << (t.M + t.S)}) >> {t.S}))"
    return f"({var} ^ (({var} & {mask << t.M}) << {-t.S}))"


def expr_supported(pattern: Pattern) -> bool:
    """True when the kernel can compute the addresses itself (string indices, Swizzle or no transform)."""
    for a in pattern.accesses:
        if callable(a.index) or (a.active is not None and not isinstance(a.active, str)):
            return False
        t = pattern.arrays[a.array].transform
        if t is not None and not isinstance(t, Swizzle):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Kernel generation


@dataclass(frozen=True)
class Slot:
    """One statement of the kernel: an access at fixed loop values (one warp instruction per warp)."""

    index: int
    access: int
    op: str
    width: int
    loop: Mapping[str, int]


@dataclass(frozen=True)
class MicroKernel:
    """Generated source for one pattern, with the analyzer's prediction and address table."""

    pattern: Pattern
    name: str
    mode: str
    body: str
    slots: tuple[Slot, ...]
    smem_bytes: int
    prediction: Prediction
    host_fill: str = field(repr=False, default="")

    @property
    def threads(self) -> int:
        return self.pattern.threads

    @property
    def block(self) -> tuple[int, int, int]:
        return self.pattern.block

    @property
    def source(self) -> str:
        """Self-contained CUDA C++ source (prelude + this kernel)."""
        return PRELUDE + self.body

    @property
    def static_ops(self) -> dict[str, int]:
        """Shared load/store statements in the kernel (the SASS should hold as many LDS/STS)."""
        return {op: sum(1 for s in self.slots if s.op == op) for op in OPS}

    @cached_property
    def address_table(self) -> tuple[int, ...]:
        """Byte offset every thread uses in every slot (``slot * threads + tid``), -1 if inactive,
        computed with the analyzer's own index evaluation and layout mapping."""
        table = [-1] * (len(self.slots) * self.threads)
        k = 0
        for access in self.pattern.accesses:
            layout = self.pattern.arrays[access.array]
            rows = trace(self.pattern, access)
            combos = _loop_combos(access)
            per_combo = self.pattern.warps
            for c in range(len(combos)):
                for warp, _loop, lanes in rows[c * per_combo:(c + 1) * per_combo]:
                    for lane, idx in enumerate(lanes):
                        tid = warp * WARP + lane
                        if idx is not None and tid < self.threads:
                            table[(k + c) * self.threads + tid] = address(layout, access, idx)
            k += len(combos)
        return tuple(table)


def kernel_name(pattern_name: str) -> str:
    """A C identifier for the pattern's kernel: ``smk_tiling_<name with non-word characters as _>``."""
    return KERNEL_PREFIX + re.sub(r"\W", "_", pattern_name)


def _loop_combos(access: Access) -> list[dict[str, int]]:
    names = list(access.loops)
    return [dict(zip(names, values, strict=True))
            for values in itertools.product(*(access.loops[n] for n in names))]


def _smem_bytes(pattern: Pattern) -> int:
    top = max(layout.base + layout.nbytes for layout in pattern.arrays.values())
    return max(128, -(-top // 128) * 128)


def _offset_function(fn: str, pattern: Pattern, access: Access) -> str:
    """``SMK_HD int fn(int tid, <loop vars>)``: the byte offset of ``access`` or -1 (inactive)."""
    layout = pattern.arrays[access.array]
    bx, by, _ = pattern.block
    loop_names = list(access.loops)
    names = ["tx", "ty", "tz", "tid", "lane", "warp", *loop_names]
    params = ", ".join(["int v_tid", *(f"int {c_name(n)}" for n in loop_names)])
    lines = [f"SMK_HD int {fn}({params}) {{",
             f"  const int v_tx = v_tid % {bx}, v_ty = (v_tid / {bx}) % {by}, v_tz = v_tid / {bx * by};",
             f"  const int v_lane = v_tid % {WARP}, v_warp = v_tid / {WARP};",
             "  (void)v_tx; (void)v_ty; (void)v_tz; (void)v_lane; (void)v_warp;"]
    if access.active is not None:
        (cond,) = expr_to_c(access.active, names)
        lines.append(f"  if (!({cond})) return -1;")
    if isinstance(access.index, tuple):
        comps = [c for text in access.index for c in expr_to_c(text, names)]
    else:
        comps = expr_to_c(access.index, names)
    shape = layout.shape
    if len(comps) == 1 and len(shape) > 1:
        # A bare integer is a flat index into the unpadded shape: unravel it.
        lines.append(f"  int flat = {comps[0]};")
        idx = []
        for d in range(len(shape) - 1, 0, -1):
            lines.append(f"  const int i{d} = smk_mod(flat, {shape[d]}); "
                         f"flat = smk_floordiv(flat, {shape[d]});")
            idx.append(f"i{d}")
        lines.append("  const int i0 = flat;")
        idx.append("i0")
        comps = list(reversed(idx))
    elif len(comps) != len(shape):
        raise InvalidArgumentError(f"access {access.title}: index has {len(comps)} components, "
                                   f"array shape {shape}")
    else:
        for d, c in enumerate(comps):
            lines.append(f"  const int i{d} = {c};")
        comps = [f"i{d}" for d in range(len(shape))]
    terms = " + ".join(f"{c} * {s}" for c, s in zip(comps, layout.strides, strict=True))
    lines.append(f"  const int o = {terms};")
    lines.append(f"  return {layout.base} + {_transform_c(layout, 'o')} * {layout.itemsize};")
    lines.append("}")
    return "\n".join(lines)


_LD = {16: "smk_ld16", 32: "smk_ld32", 64: "smk_ld64", 128: "smk_ld128"}
_ST = {16: "smk_st16", 32: "smk_st32", 64: "smk_st64", 128: "smk_st128"}


def generate(pattern: Pattern, *, name: str | None = None, mode: str = "auto") -> MicroKernel:
    """The microkernel of ``pattern`` (see the module docstring); ``mode`` is auto, expr or table."""
    if mode not in ("auto", "expr", "table"):
        raise InvalidArgumentError(f"mode={mode!r}: allowed auto, expr, table")
    if mode == "auto":
        mode = "expr" if expr_supported(pattern) else "table"
    elif mode == "expr" and not expr_supported(pattern):
        raise InvalidArgumentError(f"pattern {pattern.name!r}: expr mode needs string indices and "
                                   "Swizzle (or no) transforms; use mode='table'")
    report = analyze(pattern)  # validates every address (alignment, bounds, vectors) first
    name = name or kernel_name(pattern.name)
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise InvalidArgumentError(f"kernel name {name!r} is not a C identifier")
    threads = pattern.threads
    smem = _smem_bytes(pattern)
    bx, by, _ = pattern.block

    slots: list[Slot] = []
    for a_i, access in enumerate(pattern.accesses):
        for combo in _loop_combos(access):
            slots.append(Slot(len(slots), a_i, access.op, access.width, combo))

    funcs, stmts, host = [], [], []
    for a_i, access in enumerate(pattern.accesses):
        fn = f"{name}_off{a_i}"
        if mode == "expr":
            funcs.append(_offset_function(fn, pattern, access))
    for s in slots:
        access = pattern.accesses[s.access]
        if mode == "expr":
            args = ", ".join(["tid", *(str(s.loop[n]) for n in access.loops)])
            call = f"{name}_off{s.access}({args})"
            host.append(f"  for (int tid = 0; tid < {threads}; ++tid) "
                        f"t[{s.index * threads} + tid] = {call};")
        else:
            call = f"table[{s.index * threads} + tid]"
        loop_text = "".join(f", {k}={v}" for k, v in s.loop.items())
        if access.op == "load":
            do = f"acc += {_LD[access.width]}(sbase + static_cast<unsigned int>(off));"
        else:
            value = (s.index * threads * 4 + 1) & 0xFFFFFFF
            do = f"{_ST[access.width]}(sbase + static_cast<unsigned int>(off), {value}u + 4u * tid);"
        stmts.append(
            f"  {{  // slot {s.index}: access {s.access} ({access.op} {access.width}-bit{loop_text})\n"
            f"    const int off = {call};\n"
            f"    trace[{s.index * threads} + tid] = off;\n"
            f"    if (static_cast<unsigned int>(off) < {smem}u) {{ {do} }}\n"
            f"  }}"
        )

    header = f"// ---- pattern {pattern.name!r} -> kernel {name} (mode {mode}, {len(slots)} slots)\n"
    kernel = (
        "#if defined(__CUDACC__)\n"
        f"extern \"C\" __global__ void __launch_bounds__({threads}) {name}(\n"
        "    unsigned int* __restrict__ out, int* __restrict__ trace, const int* __restrict__ table) {\n"
        "  extern __shared__ __align__(1024) unsigned char smk_smem[];\n"
        "  const unsigned int sbase = static_cast<unsigned int>(__cvta_generic_to_shared(smk_smem));\n"
        f"  const int tid = threadIdx.x + threadIdx.y * {bx} + threadIdx.z * {bx * by};\n"
        "  unsigned int acc = 0u;\n"
        "  (void)table;\n"
        + "\n".join(stmts) + "\n"
        "  out[tid] = acc;\n"
        f"  if (tid == 0) out[{threads}] = sbase;\n"
        "}\n"
        "#endif\n"
    )
    host_fill = ""
    if mode == "expr":
        host_fill = (f"inline void {name}_fill(int* t) {{\n" + "\n".join(host) + "\n}\n")
    body = header + "\n".join(funcs) + ("\n" if funcs else "") + kernel
    return MicroKernel(pattern, name, mode, body, tuple(slots), smem, prediction_of(report), host_fill)


def suite_source(kernels: Sequence[MicroKernel], *, baseline: bool = True) -> str:
    """One module holding every kernel (and the baseline kernel): a single NVRTC compile."""
    names = [k.name for k in kernels]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InvalidArgumentError(f"duplicate kernel names in the suite: {', '.join(dup)}")
    return PRELUDE + "".join(k.body for k in kernels) + (BASELINE_SOURCE if baseline else "")


def host_check_source(kernels: Sequence[MicroKernel]) -> str:
    """A host C++17 program printing, per expr-mode kernel, ``name`` then its offset table on one
    line: compile it with g++/clang++ and compare with :attr:`MicroKernel.address_table`."""
    expr_kernels = [k for k in kernels if k.mode == "expr"]
    parts = ["#include <cstdio>\n#include <vector>\n", PRELUDE]
    for k in expr_kernels:
        parts.append(k.body)
        parts.append(k.host_fill)
    parts.append("int main() {\n")
    for k in expr_kernels:
        n = len(k.slots) * k.threads
        parts.append(f"  {{ std::vector<int> t({n}, -7); {k.name}_fill(t.data()); std::printf(\"{k.name}\");"
                     f" for (int v : t) std::printf(\" %d\", v); std::printf(\"\\n\"); }}\n")
    parts.append("  return 0;\n}\n")
    return "".join(parts)


def parse_host_check(output: str) -> dict[str, tuple[int, ...]]:
    tables = {}
    for line in output.splitlines():
        fields = line.split()
        if fields:
            tables[fields[0]] = tuple(int(v) for v in fields[1:])
    return tables


# --------------------------------------------------------------------------------------------
# The validation suite


@dataclass(frozen=True)
class SuiteCase:
    """One pattern of the validation suite and the family it belongs to (for the report)."""

    family: str
    pattern: Pattern

    @property
    def name(self) -> str:
        return self.pattern.name


_BITS = {"fp16": 16, "fp32": 32, "fp64": 64}


def strided(dtype: str, width: int, stride: int, op: str = "load", *, warps: int = 2,
            name: str | None = None) -> Pattern:
    """Lane ``l`` of each warp accesses vector ``l * stride`` of its own row (row length
    ``32 * stride`` vectors): a row access at stride 1, a column access of a tile whose rows are
    ``stride`` vectors long otherwise."""
    vec = width // _BITS[dtype]
    if vec < 1:
        raise InvalidArgumentError(f"a {width}-bit access cannot hold one {dtype} element")
    step = stride * vec
    name = name or f"stride_{dtype}_{'ld' if op == 'load' else 'st'}_w{width}_s{stride}"
    return Pattern(
        name, (32 * warps, 1, 1), {"a": SmemLayout((warps, 32 * step), dtype)},
        (Access("a", f"warp, lane * {step}", width, op, label=f"a[warp][lane*{step}]"),),
        f"{op} of a {width}-bit {dtype} access per lane at a stride of {stride} vector(s) "
        f"({stride * width // 8} bytes)",
    )


def column(dtype: str, width: int, cols: int, pad: int = 0, swizzle: Swizzle | None = None,
           op: str = "load", name: str | None = None) -> Pattern:
    """Tile ``T[32][cols (+pad)]`` read (or written) down its columns: lane = row, loop over the
    column vectors (8 warps of a 256-thread block take columns warp, warp+8, ...)."""
    vec = width // _BITS[dtype]
    ncol = cols // vec
    js = tuple(range(0, ncol, 8)) or (0,)
    swz = f"_swz{swizzle.B}{swizzle.M}{swizzle.S}" if swizzle else ""
    name = name or f"column_{dtype}_{'ld' if op == 'load' else 'st'}_w{width}_c{cols}_p{pad}{swz}"
    return Pattern(
        name, (32, 8, 1), {"t": SmemLayout((32, cols), dtype, pad, swizzle)},
        (Access("t", f"lane, {vec} * min(warp + j, {ncol - 1})", width, op, {"j": js},
                label=f"t[lane][{vec}*(warp+j)]"),),
        f"column {op} of a {dtype}[32][{cols}] tile (pad {pad}, {swizzle or 'no swizzle'}), "
        f"{width}-bit per lane",
    )


def _broadcasts() -> list[Pattern]:
    arr = {"a": SmemLayout((4096,), "fp32")}
    arr64 = {"a": SmemLayout((2048,), "fp64")}
    arr128 = {"a": SmemLayout((1024, 4), "fp32")}
    out = []
    for name, index, desc in (
        ("bcast_fp32_all_same", "0", "all 32 lanes read one word"),
        ("bcast_fp32_pairs", "lane // 2", "pairs of lanes read one word"),
        ("bcast_fp32_quads", "lane // 4", "groups of 4 lanes read one word"),
        ("bcast_fp32_4words_4banks", "lane % 4", "4 distinct words in 4 banks, 8 lanes each"),
        ("bcast_fp32_4words_1bank", "32 * (lane % 4)", "4 distinct words in ONE bank, 8 lanes each"),
        ("bcast_fp32_2words_1bank_warps", "32 * (lane % 2) + 64 * warp", "2 distinct words per bank"),
    ):
        out.append(Pattern(name, (64, 1, 1), arr, (Access("a", index, 32, "load"),), desc))
    out.append(Pattern("bcast_fp64_all_same", (64, 1, 1), arr64, (Access("a", "0", 64, "load"),),
                       "all lanes read one 8-byte word pair (pairs agree: one 32-lane phase)"))
    out.append(Pattern("bcast_fp64_halves_same", (64, 1, 1), arr64, (Access("a", "lane % 16", 64, "load"),),
                       "the two half-warps read the same 16 doubles (pairs differ: 2 phases)"))
    out.append(Pattern("bcast_fp64_pairs", (64, 1, 1), arr64, (Access("a", "lane // 2", 64, "load"),),
                       "pairs of lanes read one double"))
    out.append(Pattern("bcast_f4_all_same", (64, 1, 1), arr128, (Access("a", "0, 0", 128, "load"),),
                       "all lanes read one float4 (pairs agree: 2 half-warp phases)"))
    out.append(Pattern("bcast_f4_quarters_same", (64, 1, 1), arr128,
                       (Access("a", "lane % 8, 0", 128, "load"),),
                       "every quarter-warp reads the same 8 float4"))
    # Cases that tell the pair merge apart from other rules (issue 7 validation, second run).
    for name, index, width, op, active, desc in (
        ("bcast_fp64_pairs_shifted", "((lane + 1) // 2) % 16", 64, "load", None,
         "lanes 2k-1/2k share a double: 16 distinct doubles, aligned pairs differ"),
        ("bcast_fp64_pairs_but_one", "lane // 2 if lane < 28 else lane - 16", 64, "load",
         "lane < 28 or lane >= 30", "14 agreeing pairs, lanes 30/31 on two doubles: 16 distinct"),
        ("bcast_fp64_even_lanes", "lane // 2", 64, "load", "lane % 2 == 0",
         "only even lanes, 16 distinct doubles: partners inactive"),
        ("bcast_fp64_store_pairs", "lane // 2", 64, "store", None, "pairs of lanes store one double"),
        ("bcast_fp64_store_all_same", "0", 64, "store", None, "all lanes store one double"),
        ("bcast_f4_store_pairs", "lane // 2, 0", 128, "store", None, "pairs of lanes store one float4"),
        ("bcast_f4_pairs", "lane // 2, 0", 128, "load", None, "pairs of lanes read one float4"),
        ("bcast_f4_quads", "lane // 4, 0", 128, "load", None, "groups of 4 lanes read one float4"),
    ):
        layout = arr128 if width == 128 else arr64
        out.append(Pattern(name, (64, 1, 1), layout, (Access("a", index, width, op, active=active),), desc))
    out.append(Pattern("bcast_fp16_all_same", (64, 1, 1), {"a": SmemLayout((4096,), "fp16")},
                       (Access("a", "0", 16, "load"),), "all lanes read one half"))
    out.append(Pattern("bcast_fp32_store_same", (64, 1, 1), arr, (Access("a", "0", 32, "store"),),
                       "all lanes store to one word"))
    out.append(Pattern("bcast_fp32_store_4words_1bank", (64, 1, 1), arr,
                       (Access("a", "32 * (lane % 4)", 32, "store"),),
                       "8 lanes each store to 4 distinct words of one bank"))
    return out


def _partial() -> list[Pattern]:
    arr = {"a": SmemLayout((4096,), "fp32")}
    return [
        Pattern("partial_block48_s1", (48, 1, 1), arr, (Access("a", "tid", 32, "load"),),
                "48 threads: the second warp has 16 lanes"),
        Pattern("partial_block48_s2", (48, 1, 1), arr, (Access("a", "2 * tid", 32, "load"),),
                "48 threads at stride 2"),
        Pattern("pred_even_lanes_s2", (64, 1, 1), arr,
                (Access("a", "2 * lane + 64 * warp", 32, "load", active="lane % 2 == 0"),),
                "only even lanes active, stride 2 words: 16 words on even banks"),
        Pattern("pred_even_lanes_s16", (64, 1, 1), arr,
                (Access("a", "16 * lane", 32, "load", active="lane % 2 == 0"),),
                "only even lanes active, stride 16 words: all in bank 0"),
        Pattern("pred_lower_half_fp64", (64, 1, 1), {"a": SmemLayout((2048,), "fp64")},
                (Access("a", "lane + 32 * warp", 64, "load", active="lane < 16"),),
                "64-bit, only the first half-warp active (model: one phase)"),
        Pattern("pred_first_quarter_f4", (64, 1, 1), {"a": SmemLayout((1024, 4), "fp32")},
                (Access("a", "lane + 32 * warp, 0", 128, "load", active="lane < 8"),),
                "128-bit, only the first quarter-warp active (model: one phase)"),
    ]


def _builtin_fixes() -> list[Pattern]:
    t = BUILTIN["transpose_32x32_fp32"]()
    a = BUILTIN["gemm_a_tile"]()
    b = BUILTIN["gemm_b_tile"]()
    f = BUILTIN["fp16_pairs"]()
    c = BUILTIN["cp_async_double_buffer"]()

    def renamed(p: Pattern, name: str, array: str, layout: SmemLayout) -> Pattern:
        q = p.replace_array(array, layout)
        return Pattern(name, q.block, q.arrays, q.accesses, q.description, q.regs, q.extra_smem)

    return [
        renamed(t, "transpose_32x32_fp32_pad1", "tile", t.arrays["tile"].replace(pad=1)),
        renamed(t, "transpose_32x32_fp32_swz505", "tile",
                t.arrays["tile"].replace(transform=Swizzle(5, 0, 5))),
        renamed(a, "gemm_a_tile_pad1", "As", a.arrays["As"].replace(pad=1)),
        renamed(b, "gemm_b_tile_swz506", "Bs", b.arrays["Bs"].replace(transform=Swizzle(5, 0, 6))),
        renamed(f, "fp16_pairs_pad2", "tile", f.arrays["tile"].replace(pad=2)),
        renamed(c, "cp_async_double_buffer_pad4", "As", c.arrays["As"].replace(pad=4)),
        renamed(c, "cp_async_double_buffer_swz323", "As", c.arrays["As"].replace(transform=Swizzle(3, 2, 3))),
    ]


def _row_tiles() -> list[Pattern]:
    """2-D blocks walking tiles along rows (conflict-free) and the 16x16 column case of the docs."""
    return [
        Pattern("row_fp32_block32x8", (32, 8, 1), {"t": SmemLayout((32, 32), "fp32")},
                (Access("t", "ty + j, tx", 32, "load", {"j": (0, 8, 16, 24)}),),
                "row read t[ty+j][tx]: consecutive lanes, consecutive banks"),
        Pattern("row_fp16_half2_block32x8", (32, 8, 1), {"t": SmemLayout((32, 64), "fp16")},
                (Access("t", "ty + j, 2 * tx", 32, "store", {"j": (0, 8, 16, 24)}),),
                "half2 row store"),
        Pattern("col_fp32_block16x16", (16, 16, 1), {"t": SmemLayout((16, 16), "fp32")},
                (Access("t", "tx, ty", 32, "load"),),
                "16x16 block reads a 16-wide tile by column: lanes = 2 rows of 16 tx -> 8-way"),
        Pattern("col_fp32_block16x16_pad1", (16, 16, 1), {"t": SmemLayout((16, 16), "fp32", pad=1)},
                (Access("t", "tx, ty", 32, "load"),), "same with one word of padding"),
        Pattern("mixed_ld_st_fp32_block32x4", (32, 4, 1), {"t": SmemLayout((32, 33), "fp32")},
                (Access("t", "ty + 4 * i, tx", 32, "store", {"i": tuple(range(8))}),
                 Access("t", "tx, ty + 4 * i", 32, "load", {"i": tuple(range(8))})),
                "padded transpose, 32x4 block: stores by row, loads by column"),
    ]


def validation_suite() -> list[SuiteCase]:
    """The patterns the device validation measures (more than 100), grouped into families."""
    cases: list[SuiteCase] = []

    def add(family: str, patterns) -> None:
        cases.extend(SuiteCase(family, p) for p in patterns)

    add("builtin", (make() for make in BUILTIN.values()))
    add("builtin_fixed", _builtin_fixes())
    add("stride_fp32_load", (strided("fp32", 32, s) for s in range(1, 34)))
    add("stride_fp32_store", (strided("fp32", 32, s, "store") for s in (1, 2, 3, 4, 8, 16, 31, 32, 33)))
    add("stride_fp16_load", (strided("fp16", 16, s) for s in (1, 2, 3, 4, 8, 16, 32, 33)))
    add("stride_fp16_store", (strided("fp16", 16, s, "store") for s in (1, 2, 3, 32)))
    add("stride_fp64_load", (strided("fp64", 64, s) for s in (1, 2, 3, 4, 8, 16, 17, 32)))
    add("stride_fp64_store", (strided("fp64", 64, s, "store") for s in (1, 2, 16)))
    add("vec64_load", [*(strided("fp32", 64, s) for s in (1, 2, 3, 4, 8, 16)),
                       *(strided("fp16", 64, s) for s in (1, 2, 8))])
    add("vec64_store", (strided("fp32", 64, s, "store") for s in (1, 2, 16)))
    add("vec128_load", [*(strided("fp32", 128, s) for s in (1, 2, 3, 4, 8)),
                        *(strided("fp64", 128, s) for s in (1, 2, 4)),
                        strided("fp16", 128, 1)])
    add("vec128_store", (strided("fp32", 128, s, "store") for s in (1, 2, 8)))
    add("column_padded", [*(column("fp32", 32, 32, pad) for pad in (0, 1, 2, 4)),
                          *(column("fp64", 64, 16, pad) for pad in (0, 1)),
                          *(column("fp16", 32, 64, pad) for pad in (0, 2)),
                          *(column("fp32", 128, 32, pad) for pad in (0, 4)),
                          column("fp32", 32, 32, 1, op="store")])
    add("column_swizzled", [column("fp32", 32, 32, swizzle=Swizzle(5, 0, 5)),
                            column("fp64", 64, 16, swizzle=Swizzle(4, 0, 4)),
                            column("fp16", 32, 64, swizzle=Swizzle(5, 1, 5)),
                            column("fp32", 128, 32, swizzle=Swizzle(3, 2, 3)),
                            column("fp32", 64, 32, swizzle=Swizzle(4, 1, 4))])
    add("row_tiles", _row_tiles())
    add("broadcast", _broadcasts())
    add("partial_predicated", _partial())
    return cases


def suite_kernels(cases: Sequence[SuiteCase] | None = None) -> list[tuple[SuiteCase, MicroKernel]]:
    cases = validation_suite() if cases is None else cases
    return [(c, generate(c.pattern)) for c in cases]
