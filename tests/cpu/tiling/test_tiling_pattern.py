"""Patterns: thread mapping, index expressions, built-in examples from the guide, and the advisor."""

import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.tiling import BUILTIN, Access, Pattern, SmemLayout, Swizzle, advise, analyze, expr, load_pattern


def by_label(report):
    return {a.access.title.split(" (")[-1].rstrip(")"): a for a in report.accesses}


def test_transpose_row_write_free_column_read_32_way():
    rep = by_label(analyze(BUILTIN["transpose_32x32_fp32"]()))
    assert rep["row write"].conflict_free and rep["row write"].wavefronts == 32
    assert rep["column read"].degree == 32 and rep["column read"].wavefronts == 32 * 32


def test_transpose_padding_by_one_word_removes_the_conflict():
    p = BUILTIN["transpose_32x32_fp32"]()
    padded = p.replace_array("tile", SmemLayout((32, 32), "fp32", pad=1))
    assert analyze(padded).conflict_free


@pytest.mark.parametrize("name,wavefronts,ideal", [
    ("transpose_32x32_fp32", 1056, 64), ("gemm_a_tile", 8256, 320), ("gemm_b_tile", 2112, 128),
    ("fp16_pairs", 1120, 128), ("cp_async_double_buffer", 2176, 384),
])
def test_builtin_totals(name, wavefronts, ideal):
    rep = analyze(BUILTIN[name]())
    assert (rep.wavefronts, rep.ideal) == (wavefronts, ideal)


def test_fp16_scalar_and_half2_rows_are_free_column_is_32_way():
    accesses = analyze(BUILTIN["fp16_pairs"]()).accesses
    assert [a.degree for a in accesses] == [1.0, 1.0, 32.0]
    assert accesses[0].broadcasts == 16 * len(accesses[0].instructions)


def test_cp_async_stores_are_4_wavefronts_and_float4_rows_8_way():
    store, load = analyze(BUILTIN["cp_async_double_buffer"]()).accesses
    assert {i.result.wavefronts for i in store.instructions} == {4}
    assert {i.result.wavefronts for i in load.instructions} == {32}


@pytest.mark.parametrize("name,pad,pad_bytes,swizzle", [
    ("transpose_32x32_fp32", 1, 128, Swizzle(5, 0, 5)),
    ("gemm_a_tile", 1, 256, Swizzle(5, 0, 5)),
    ("gemm_b_tile", 1, 128, Swizzle(5, 0, 6)),
    ("fp16_pairs", 2, 128, Swizzle(5, 1, 5)),
    ("cp_async_double_buffer", 4, 2048, Swizzle(3, 2, 3)),
])
def test_advisor_finds_smallest_padding_and_a_swizzle(name, pad, pad_bytes, swizzle):
    (advice,) = advise(BUILTIN[name]())
    assert not advice.conflict_free
    assert advice.padding.layout.pad == pad and advice.padding.added_bytes == pad_bytes
    assert advice.swizzles[0].layout.transform == swizzle and advice.swizzles[0].added_bytes == 0
    assert advice.best.added_bytes == 0
    fixed = BUILTIN[name]().replace_array(advice.array, advice.padding.layout)
    assert analyze(fixed).conflict_free


def test_advisor_reports_occupancy_change_when_padding_costs_a_block():
    # fp32[32][904] = 115712 B + 1 KB reserved = exactly half of sm_90's 228 KB: 2 blocks per SM.
    # Row stride 904 words puts lanes on 4 banks (8-way); pad 1 fixes it but adds 128 B -> 1 block.
    p = Pattern("tight", (32, 1, 1), {"t": SmemLayout((32, 904))}, (Access("t", "lane, 0"),), regs=32)
    (advice,) = advise(p, swizzles=())
    assert advice.wavefronts == 8 and advice.padding.layout.pad == 1
    assert (advice.occupancy_before.blocks_per_sm, advice.padding.occupancy_after.blocks_per_sm) == (2, 1)
    assert advice.padding.occupancy_after.limiting == ("shared_memory",)


def test_conflict_free_pattern_gets_no_fix():
    p = Pattern("row", (32, 1, 1), {"t": SmemLayout((32,))}, (Access("t", "lane"),))
    (advice,) = advise(p)
    assert advice.conflict_free and advice.best is None


def test_two_dimensional_block_maps_threads_to_lanes_and_warps():
    p = Pattern("2d", (16, 16, 1), {"t": SmemLayout((16, 16))}, (Access("t", "ty, tx"),))
    assert p.thread_env(0, 17) == {"tx": 1, "ty": 1, "tz": 0, "tid": 17, "lane": 17, "warp": 0}
    assert p.thread_env(3, 31)["ty"] == 7
    # warp 0 holds rows 0 and 1 of a 16-wide tile: 32 consecutive words
    assert analyze(p).conflict_free
    col = Pattern("2d", (16, 16, 1), {"t": SmemLayout((16, 16))}, (Access("t", "tx, ty"),))
    # (tx, ty) at row stride 16 words: ty in {0, 1} per warp -> 4 banks x 8 words = 8-way, which is
    # why +1 padding analyses must follow the real lane order of 2-D blocks
    assert by_label(analyze(col))["load t"].worst.result.wavefronts == 8


def test_partial_last_warp_and_active_predicate():
    p = Pattern("p", (48, 1, 1), {"t": SmemLayout((64,))}, (Access("t", "tid"),))
    last = analyze(p).accesses[0].instructions[1].result
    assert last.active_lanes == 16 and last.ideal == 1
    half = Pattern("h", (32, 1, 1), {"t": SmemLayout((32, 32))},
                   (Access("t", "lane, 0", active="lane < 4"),))
    assert analyze(half).accesses[0].instructions[0].result.wavefronts == 4


def test_callable_index_matches_string_index():
    s = Pattern("s", (32, 8, 1), {"t": SmemLayout((32, 32))},
                (Access("t", "tx, ty + j", loops={"j": (0, 8)}),))
    c = Pattern("c", (32, 8, 1), {"t": SmemLayout((32, 32))},
                (Access("t", lambda v: (v["tx"], v["ty"] + v["j"]), loops={"j": (0, 8)}),))
    list_form = Pattern("l", (32, 8, 1), {"t": SmemLayout((32, 32))},
                        (Access("t", ["tx", "ty + j"], loops={"j": [0, 8]}),))
    assert analyze(s).wavefronts == analyze(c).wavefronts == analyze(list_form).wavefronts == 512


def test_flat_index_is_into_the_unpadded_shape():
    layout = SmemLayout((4, 8), pad=1)
    assert layout.offset(9) == layout.offset((1, 1)) == 10


@pytest.mark.parametrize("text,match", [
    ("__import__('os')", "Call|only min"), ("tx.real", "Attribute"), ("tx / 2", "'/'"),
    ("tx[0]", "Subscript"), ("1.5", "only integers"), ("lambda: 1", "Lambda"), ("", "non-empty"),
])
def test_unsafe_or_invalid_expressions_are_rejected(text, match):
    with pytest.raises(InvalidArgumentError, match=match):
        expr.parse(text)


def test_expression_semantics():
    env = {"tx": 5, "ty": 2}
    assert expr.evaluate("tx ^ (ty << 3), max(tx, 9) % 4", env) == (5 ^ 16, 1)
    assert expr.evaluate("tx if ty > 1 and not tx == 0 else 0", env) == 5
    with pytest.raises(InvalidArgumentError, match="known variables"):
        expr.evaluate("k + 1", env)


def test_bad_accesses_are_clear_errors():
    with pytest.raises(InvalidArgumentError, match="outside shape"):
        analyze(Pattern("o", (32, 1, 1), {"t": SmemLayout((16,))}, (Access("t", "lane"),)))
    with pytest.raises(InvalidArgumentError, match="not aligned"):
        analyze(Pattern("a", (32, 1, 1), {"t": SmemLayout((32, 33))}, (Access("t", "lane, 0", 128),)))
    with pytest.raises(InvalidArgumentError, match="not declared"):
        Pattern("d", (32, 1, 1), {"t": SmemLayout((32,))}, (Access("u", "lane"),))
    with pytest.raises(InvalidArgumentError, match="dtype"):
        SmemLayout((4,), "int8")
    with pytest.raises(InvalidArgumentError, match="cannot read"):
        analyze(Pattern("w", (32, 1, 1), {"t": SmemLayout((32,), "fp64")}, (Access("t", "lane", 32),)))


def test_json_and_python_specs(tmp_path):
    spec = {"name": "tr", "block": [32, 8],
            "arrays": {"tile": {"shape": [32, 32], "dtype": "fp32", "pad": 0, "swizzle": [5, 0, 5]}},
            "accesses": [{"array": "tile", "index": "tx, ty + j", "loops": {"j": {"start": 0, "stop": 32,
                                                                               "step": 8}}}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(spec))
    assert analyze(load_pattern(str(path))).conflict_free
    py = tmp_path / "p.py"
    py.write_text("from smemkit.tiling import Access, Pattern, SmemLayout\n"
                  "def pattern():\n"
                  "    return Pattern('py', (32,), {'t': SmemLayout((32, 32))},\n"
                  "                   (Access('t', lambda v: (v['lane'], 0)),))\n")
    assert analyze(load_pattern(str(py))).wavefronts == 32
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**spec, "colour": 1}))
    with pytest.raises(InvalidArgumentError, match="unknown key"):
        load_pattern(str(bad))
    with pytest.raises(InvalidArgumentError, match="built-ins"):
        load_pattern("no_such_pattern")
