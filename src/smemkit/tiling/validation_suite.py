"""The patterns the H200 validation of the bank-conflict model measures (``benchmarks/tiling_validate.py``),
and their microkernels.

:func:`validation_suite`: the built-in examples and their padded/swizzled fixes, strided row/column
accesses (strides 1..33) in fp16/fp32/fp64, 64- and 128-bit vectors, broadcasts, partial warps and
predicated lanes, loads and stores, grouped into families for the report; :func:`suite_kernels`
generates each one's kernel (:mod:`smemkit.tiling.microkernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.microkernel import MicroKernel, generate
from smemkit.tiling.pattern import Access, Pattern
from smemkit.tiling.swizzle import Swizzle


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
    # Cases that tell the pair merge apart from other rules (issue 7's validation).
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
