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

The patterns the H200 validation runs through these kernels (``benchmarks/tiling_validate.py``)
are :mod:`smemkit.tiling.validation_suite`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from smemkit.errors import InvalidArgumentError
from smemkit.tiling.banks import WARP
from smemkit.tiling.expr import c_name
from smemkit.tiling.expr import to_c as expr_to_c
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
# Address translation (the index expressions' C++ is :func:`smemkit.tiling.expr.to_c`)


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
