"""Property-based fuzzing of every analysis command: any argv gives a result or one of smemkit's
own errors (rc 0 or 2, ``smemkit: error: ...``), never a traceback (fuzz_support.check_result).

Each test prints ``fuzz <command>: N inputs, 0 tracebacks``; the example counts are fixed and the
draws derandomized, so CI runs the same inputs every time.
"""

from pathlib import Path

from fuzz_support import INTS, TEXT, argv_of, check_result, mostly, number_text, option, run_fuzz
from hypothesis import strategies as st

from smemkit.offload.models import BUILTIN_MODELS
from smemkit.reduction.workloads import BUILTIN, NEGATIVE_CONTROLS
from smemkit.tiling.examples import BUILTIN as PATTERNS

ROOT = Path(__file__).resolve().parents[2]
ATOMICS_DATA = ROOT / "tests" / "cpu" / "atomics" / "data"
PROFILES = st.sampled_from(["h100", "h200", "rtx5090", "H200_SXM", "a100", ""])
ARCHS = st.sampled_from(["sm_80", "sm_86", "sm_89", "sm_90"])
SIZES = number_text(st.one_of(st.integers(1, 70_000), st.sampled_from([1024, 4096, 16384, 65536])))


def one_of_or_text(values) -> st.SearchStrategy[str]:
    return mostly(st.sampled_from(list(values)), TEXT)


def check(argv) -> int:
    return check_result(argv)[0]


def required(flag: str, values) -> st.SearchStrategy[list[str]]:
    """A required option: always given (its absence is argparse's business, checked once)."""
    return values.map(lambda v: [flag, v])


def test_fuzz_advise(capsys):
    workloads = one_of_or_text([*BUILTIN, *NEGATIVE_CONTROLS, "examples/rmsnorm_bwd.py", "nope.py"])
    argv = argv_of(st.just(["advise"]), workloads.map(lambda w: [w]), required("--rows", SIZES),
                   required("--width", SIZES), option("--profile", mostly(PROFILES, TEXT)),
                   st.sampled_from([[], ["--json"]]))
    run_fuzz("advise", argv, check, 120, capsys)
    assert check(["advise", "layernorm_bwd", "--width", "4096"]) == 2  # --rows missing: usage error


def test_fuzz_offload_plan(capsys):
    models = one_of_or_text([*BUILTIN_MODELS, "gpt-5"])
    rate = number_text(st.floats(0.01, 2000))
    argv = argv_of(st.just(["offload", "plan"]), required("--model", models), required("--batch", SIZES),
                   required("--seq", SIZES), required("--gpu-mem", number_text(st.floats(0, 300))),
                   option("--profile", PROFILES), option("--tflops", rate), option("--host-gbps", rate),
                   option("--hbm-tbps", rate), st.sampled_from([[], ["--exact-budget"]]),
                   st.sampled_from([["--json"], ["--json"], []]))
    run_fuzz("offload plan", argv, check, 150, capsys)


def test_fuzz_offload_path(capsys):
    good = st.tuples(st.integers(1, 30_000), st.integers(1, 70_000)).map(lambda p: f"{p[0]}x{p[1]}")
    shapes = mostly(st.one_of(good, st.sampled_from(["4096x14336", "8x8", "4096x600000"])),
                    st.one_of(st.tuples(INTS, INTS).map(lambda p: f"{p[0]}x{p[1]}"), TEXT,
                              st.sampled_from(["x", "1x", "4096X14336 "])))
    argv = argv_of(st.just(["offload", "path"]), required("--shape", shapes), required("--batch", SIZES),
                   required("--ratio", number_text(st.floats(0, 1))), option("--profile", PROFILES),
                   st.sampled_from([[], ["--json"]]))
    run_fuzz("offload path", argv, check, 200, capsys)


def test_fuzz_tiling_analyze(capsys):
    patterns = one_of_or_text([*PATTERNS, "missing.json", "x.py"])
    argv = argv_of(st.just(["tiling", "analyze"]), patterns.map(lambda p: [p]),
                   option("--regs", number_text(st.integers(0, 255))),
                   option("--max-pad", number_text(st.integers(0, 64))),
                   option("--warp", number_text(st.integers(0, 8))),
                   option("--arch", mostly(ARCHS, st.just("sm_100"))),
                   st.sampled_from([["--no-advice"], ["--no-advice", "--json"], ["--all-instructions",
                                                                                "--no-advice"], []]))
    run_fuzz("tiling analyze", argv, check, 40, capsys)


def test_fuzz_occupancy(capsys):
    smem = st.one_of(number_text(st.integers(0, 232_448)), st.integers(0, 300).map(lambda k: f"{k}K"))
    argv = argv_of(st.just(["occupancy"]),
                   option("--arch", mostly(ARCHS, st.just("sm_70"))),
                   required("--threads", number_text(st.integers(1, 1024))),
                   required("--regs", number_text(st.integers(0, 255))), option("--smem", smem),
                   option("--cluster", number_text(st.integers(1, 16))),
                   option("--carveout", number_text(st.sampled_from([0, 8, 16, 32, 64, 100, 132, 164, 196,
                                                                     228]))),
                   st.sampled_from([[], ["--non-portable"]]), st.sampled_from([[], ["--json"]]))
    run_fuzz("occupancy", argv, check, 200, capsys)


def test_fuzz_atomics_analyze(capsys):
    reports = mostly(st.sampled_from([str(ATOMICS_DATA / n) for n in
                                      ("raw_instances.csv", "raw_rollups.csv", "details_long.csv")]),
                     st.one_of(st.sampled_from([str(ATOMICS_DATA / "hand_table.json"),
                                                str(ATOMICS_DATA / "README.md")]), TEXT))
    tables = mostly(st.just(str(ATOMICS_DATA / "hand_table.json")),
                    st.sampled_from([str(ATOMICS_DATA / "raw_rollups.csv"), "missing.json"]))
    variants = st.lists(mostly(st.sampled_from(["alu=add.int32.ret", "cas=cas.int32.ret",
                                                "atom=inc.int32.noret"]),
                               st.one_of(st.sampled_from(["alu=nope", "x=y", "alu"]), TEXT)), max_size=2)
    argv = argv_of(st.just(["atomics", "analyze"]), reports.map(lambda r: [r]), option("--table", tables),
                   option("--pattern", one_of_or_text(["same", "distinct_banks", "conflict4", "mix4",
                                                       "one_bank"])),
                   option("--scope", mostly(st.sampled_from(["private", "shared"]), st.just("global"))),
                   variants.map(lambda vs: [a for v in vs for a in ("--variant", v)]),
                   st.sampled_from([[], ["--per-launch"]]), st.sampled_from([[], ["--json"]]))
    run_fuzz("atomics analyze", argv, check, 80, capsys)


def test_fuzz_atomics_table(capsys):
    tables = mostly(st.just(str(ATOMICS_DATA / "hand_table.json")),
                    st.sampled_from([str(ATOMICS_DATA / "details_long.csv"), "missing.json"]))
    variants = st.lists(one_of_or_text(["add.int32.noret", "cas.int32.ret", "inc.int32.noret",
                                        "add.float32.noret", "nope"]), max_size=2)
    argv = argv_of(st.just(["atomics", "table"]), option("--table", tables),
                   variants.map(lambda vs: [a for v in vs for a in ("--variant", v)]),
                   option("--scope", mostly(st.sampled_from(["private", "shared"]), st.just("x"))),
                   st.sampled_from([["--json"], ["--json"], []]))
    run_fuzz("atomics table", argv, check, 100, capsys)


def test_fuzz_info(capsys):
    profiles = mostly(PROFILES, st.one_of(TEXT, st.just(str(ATOMICS_DATA / "hand_table.json"))))
    argv = argv_of(st.just(["info"]), option("--profile", profiles))
    run_fuzz("info", argv, check, 25, capsys)


def test_fuzz_cache_info(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SMEMKIT_CACHE_DIR", str(tmp_path / "cache"))
    argv = argv_of(st.just(["cache"]), mostly(st.sampled_from([["info"], ["clear"]]),
                                              st.one_of(st.just([]), TEXT.map(lambda t: [t]))))
    run_fuzz("cache info", argv, check, 25, capsys)
