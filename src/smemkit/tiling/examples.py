"""Built-in access patterns from the shared-memory tiling guide (seed 001), by name.

Each is small enough to check by hand; the tests pin their wavefront counts.
"""

from __future__ import annotations

from collections.abc import Callable

from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.pattern import Access, Pattern

J4 = (0, 8, 16, 24)


def transpose_32x32_fp32() -> Pattern:
    """Classic tiled transpose: rows written from global, columns read back (32-way without padding)."""
    return Pattern(
        "transpose_32x32_fp32", (32, 8, 1), {"tile": SmemLayout((32, 32), "fp32")},
        (Access("tile", "ty + j, tx", 32, "store", {"j": J4}, label="tile[ty+j][tx] = in (row write)"),
         Access("tile", "tx, ty + j", 32, "load", {"j": J4}, label="out = tile[tx][ty+j] (column read)")),
        "32x32 fp32 tile, block 32x8: each warp reads one column of the tile, so all 32 lanes hit "
        "the same bank at row stride 32 words. Padding by one word or an XOR swizzle removes it.",
    )


def gemm_a_tile() -> Pattern:
    """GEMM A tile As[BM=64][BK=32]: filled along K (conflict-free), read down M by thread-per-row."""
    return Pattern(
        "gemm_a_tile", (32, 8, 1), {"As": SmemLayout((64, 32), "fp32")},
        (Access("As", "ty + 8*i, tx", 32, "store", {"i": tuple(range(8))},
                label="As[ty+8i][tx] = A (along K)"),
         Access("As", "tx + 32*(ty % 2), k", 32, "load", {"k": tuple(range(32))},
                label="a = As[m=tx+32(ty%2)][k] (down M)")),
        "Row-major A tile, BK = 32 fp32. Consecutive threads along K hit consecutive banks; "
        "threads that each own a row of C read the same k of 32 different rows: 32-way.",
        regs=64,
    )


def gemm_b_tile() -> Pattern:
    """GEMM B tile Bs[BK=32][BN=64]: filled along N (conflict-free), read down K at a fixed column."""
    return Pattern(
        "gemm_b_tile", (32, 8, 1), {"Bs": SmemLayout((32, 64), "fp32")},
        (Access("Bs", "ty + 8*i, tx + 32*j", 32, "store", {"i": (0, 1, 2, 3), "j": (0, 1)},
                label="Bs[ty+8i][tx+32j] = B (along N)"),
         Access("Bs", "tx, ty + 8*j", 32, "load", {"j": tuple(range(8))},
                label="b = Bs[k=tx][n=ty+8j] (down K)")),
        "Row-major B tile with BN = 64 (a multiple of 32): lanes that walk K at one column n hit "
        "bank (64k + n) % 32 = n % 32 for every k, a 32-way conflict.",
        regs=64,
    )


def fp16_pairs() -> Pattern:
    """fp16 tile[32][64]: scalar and half2 row reads are conflict-free; half2 column reads are 32-way."""
    return Pattern(
        "fp16_pairs", (32, 4, 1), {"tile": SmemLayout((32, 64), "fp16")},
        (Access("tile", "ty + 4*i, tx + 32*h", 16, "load", {"i": tuple(range(8)), "h": (0, 1)},
                label="x = tile[r][tx] (scalar fp16, pairs share a word)"),
         Access("tile", "ty + 4*i, 2*tx", 32, "load", {"i": tuple(range(8))},
                label="x2 = half2 tile[r][2tx] (row)"),
         Access("tile", "tx, 2*(ty + 4*i)", 32, "load", {"i": tuple(range(8))},
                label="x2 = half2 tile[tx][2c] (column)")),
        "Two fp16 share a 4-byte word: lanes reading the two halves of one word are served "
        "together (no conflict). A half2 column read at row stride 64 halves = 32 words is "
        "32-way; padding by 2 halves (one word) fixes it, 1 half would misalign the half2.",
    )


def cp_async_double_buffer() -> Pattern:
    """Two-stage As[2][64][32] filled by 16-byte cp.async, read with 128-bit loads by thread-per-row."""
    return Pattern(
        "cp_async_double_buffer", (32, 4, 1), {"As": SmemLayout((2, 64, 32), "fp32")},
        (Access("As", "s, tid // 8 + 16*i, 4*(tid % 8)", 128, "store", {"s": (0, 1), "i": (0, 1, 2, 3)},
                label="cp.async 16 B: As[s][tid/8+16i][4(tid%8)]"),
         Access("As", "s, lane + 32*(warp % 2), 4*kk", 128, "load", {"s": (0, 1), "kk": tuple(range(8))},
                label="a4 = float4 As[s][m=lane+32(warp%2)][4kk]")),
        "Double-buffered A tile (ping/pong stage index s). 16-byte cp.async writes one 128-byte "
        "row per quarter-warp: conflict-free. A thread-per-row float4 read puts the 8 rows of a "
        "quarter-warp on the same 4 banks: 8-way. Padding must keep rows 16-byte aligned (pad 4), "
        "or an XOR swizzle on 16-byte chunks (Swizzle(3,2,3)) fixes it at no cost.",
        regs=64,
    )


BUILTIN: dict[str, Callable[[], Pattern]] = {
    f.__name__: f
    for f in (transpose_32x32_fp32, gemm_a_tile, gemm_b_tile, fp16_pairs, cp_async_double_buffer)
}
