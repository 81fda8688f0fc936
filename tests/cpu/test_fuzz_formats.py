"""Property-based fuzzing of every file format smemkit reads, through the command that reads it:
device profile JSON, Nsight Compute CSV, tiling pattern JSON, workload spec .py, model config
JSON, atomics service table JSON. Any file gives a result or one of smemkit's own errors, never a
traceback (fuzz_support.check_result).

For Nsight Compute reports damaged the ways a real one gets damaged (truncated, a column dropped,
a number replaced by text, a counter scaled), the analysis either calls the report damaged or
inconsistent (rc 2) or gives every launch the verdict of the valid report: never rc 0 with a
different verdict. "Counter" means the raw counts (instructions, wavefronts, bank conflicts,
active cycles, duration); an average such as warps per cycle or a percentage of peak can be
edited into another plausible report, which no check can tell from a real one.
"""

import csv
import io
import json
from pathlib import Path

import pytest
from fuzz_support import JSON_VALUES, TEXT, check_result, mostly, mutate_json, run_fuzz
from hypothesis import strategies as st

from smemkit.hw import ncu
from smemkit.hw.profile import builtin_profiles

ROOT = Path(__file__).resolve().parents[2]
ATOMICS_DATA = ROOT / "tests" / "cpu" / "atomics" / "data"


@pytest.fixture
def file_in(tmp_path):
    """A writer of the fuzzed file: the same path for every example of a test."""
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return str(path)
    return write


# ---- device profiles -----------------------------------------------------------------------

def test_fuzz_device_profile_json(capsys, file_in):
    base = builtin_profiles()["h200_sxm"].to_dict()
    base["dsmem"]["barrier_cycles"] = {str(k): v for k, v in base["dsmem"]["barrier_cycles"].items()}
    base["host_sm_load_gbps"] = {str(k): v for k, v in base["host_sm_load_gbps"].items()}
    commands = st.sampled_from([
        ["advise", "layernorm_bwd", "--rows", "1000", "--width", "12288"],
        ["offload", "path", "--shape", "4096x14336", "--batch", "4", "--ratio", "0.1"],
        ["offload", "plan", "--model", "llama-3-8b", "--batch", "4", "--seq", "256", "--gpu-mem", "8",
         "--json"],
        ["info"],
    ])

    def check(case) -> int:
        doc, argv = case
        path = file_in("profile.json", json.dumps(doc))
        return check_result([*argv, "--profile", path])[0]

    run_fuzz("device profile JSON", st.tuples(mostly(mutate_json(base), JSON_VALUES), commands), check, 150,
             capsys)


# ---- Nsight Compute reports ----------------------------------------------------------------

# A valid report small enough to fuzz quickly: the H200 report's launches 0-6 (DRAM-bound and
# latency-bound kernels), 15, 23 and 30 (atomic-bound), the columns smemkit reads.
LAUNCHES = (0, 1, 2, 3, 4, 5, 6, 15, 23, 30)
COUNTERS = (ncu.INST_ATOM, ncu.INST_ALU, ncu.INST_CAS, ncu.CONFLICTS, ncu.DURATION,
            *(f"{ncu.WAVEFRONTS}.{r}" for r in ("sum", "min", "max")),
            *(f"{ncu.CYCLES}.{r}" for r in ("sum", "avg", "min", "max")))


def small_report() -> list[list[str]]:
    rows = list(csv.reader(io.StringIO((ROOT / "tests/data/atomics_hist_ncu.csv").read_text())))
    keep = [i for i, name in enumerate(rows[0])
            if name in ("ID", "Kernel Name", "Block Size", "Grid Size", "CC", *ncu.PROFILE_METRICS,
                        ncu.SM_COUNT, "device__attribute_clock_rate")]
    return [[r[i] for i in keep] for r in (rows[0], rows[1], *(rows[2 + n] for n in LAUNCHES))]


def csv_text(rows) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


def verdicts(path: str) -> tuple[int, list | None]:
    rc, out, _ = check_result(["atomics", "analyze", path, "--per-launch", "--json"])
    if rc:
        return rc, None
    return rc, [(k["verdict"]["bottleneck"], k["verdict"]["atomic_bound"]) if k["verdict"] else None
                for k in json.loads(out)["kernels"]]


def test_small_report_keeps_the_full_reports_verdicts(file_in):
    full = verdicts(str(ROOT / "tests/data/atomics_hist_ncu.csv"))[1]
    rc, small = verdicts(file_in("small.csv", csv_text(small_report())))
    assert rc == 0 and small == [full[n] for n in LAUNCHES]
    assert {v[0] for v in small} == {"dram", "none", "atomic"}  # all three verdicts are at stake


def damaged_reports(rows: list[list[str]]) -> st.SearchStrategy[tuple[str, str]]:
    """(kind, CSV text) of ``rows`` damaged one way."""
    text = csv_text(rows)
    header = rows[0]
    data_rows = range(2, len(rows))
    numeric = [(r, c) for r in data_rows for c in range(len(header))
               if rows[r][c].replace(",", "").replace(".", "").isdigit()]
    counters = [header.index(name) for name in COUNTERS]

    def scale(r, c, k):
        new = [list(row) for row in rows]
        new[r][c] = repr(float(new[r][c].replace(",", "")) * k)
        return csv_text(new)

    def replace(rc, word):
        new = [list(row) for row in rows]
        new[rc[0]][rc[1]] = word
        return csv_text(new)

    return st.one_of(
        st.integers(0, len(text) - 1).map(lambda n: ("truncate", text[:n])),
        st.integers(0, len(header) - 1).map(lambda c: ("drop a column", csv_text([r[:c] + r[c + 1:]
                                                                                  for r in rows]))),
        st.tuples(st.sampled_from(numeric), st.one_of(TEXT, st.sampled_from(["n/a", "", "lots", "1e999"])))
        .map(lambda a: ("text for a number", replace(*a))),
        st.tuples(st.sampled_from(list(data_rows)), st.sampled_from(counters),
                  st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.25, 2.0, 4.0, 10.0]))
        .map(lambda a: ("scale a counter", scale(*a))),
    )


def test_fuzz_ncu_csv_damage_never_flips_a_verdict(capsys, file_in):
    rows = small_report()
    rc, valid = verdicts(file_in("valid.csv", csv_text(rows)))
    assert rc == 0
    kinds: dict[str, int] = {}

    def check(case) -> int:
        kind, text = case
        kinds[kind] = kinds.get(kind, 0) + 1
        rc, got = verdicts(file_in("damaged.csv", text))
        if rc == 0:  # a truncation at a line end is a valid report of fewer launches
            want = valid[:len(got)] if kind == "truncate" else valid
            assert got == want, (kind, got, want)
        return rc

    outcomes = run_fuzz("ncu CSV damage", damaged_reports(rows), check, 200, capsys)
    assert set(kinds) == {"truncate", "drop a column", "text for a number", "scale a counter"}
    assert outcomes[2] > 0 and outcomes[0] > 0  # both outcomes occur: the property is not vacuous


def test_fuzz_ncu_csv_any_text(capsys, file_in):
    header = '"ID","Kernel Name",' + ",".join(f'"{m}"' for m in ncu.PROFILE_METRICS) + "\n"
    lines = st.lists(st.one_of(TEXT, st.lists(st.one_of(TEXT, st.integers().map(str)), max_size=20)
                               .map(lambda cells: ",".join(f'"{c}"' for c in cells))), max_size=5)
    texts = st.one_of(TEXT, lines.map(lambda ls: header + "\n".join(ls)))

    def check(text) -> int:
        return check_result(["atomics", "analyze", file_in("any.csv", text)])[0]

    run_fuzz("ncu CSV any text", texts, check, 60, capsys)


# ---- tiling patterns -----------------------------------------------------------------------

PATTERN_BASES = [
    {"name": "transpose", "block": [32, 8], "regs": 32,
     "arrays": {"tile": {"shape": [32, 32], "dtype": "fp32", "pad": 0, "swizzle": [5, 0, 5]}},
     "accesses": [{"array": "tile", "index": "tx, ty + j", "width": 32, "op": "load",
                   "loops": {"j": [0, 8, 16, 24]}, "active": "ty < 4", "label": "column read"}]},
    {"block": [32, 2], "arrays": {"a": {"shape": [64], "dtype": "fp64"}},
     "accesses": [{"array": "a", "index": "tid", "width": 64, "loops": {"i": {"start": 0, "stop": 4}}}]},
]


def test_fuzz_tiling_pattern_json(capsys, file_in):
    flags = st.sampled_from([["--no-advice", "--json"], ["--no-advice"], ["--json"]])

    def check(case) -> int:
        doc, extra = case
        return check_result(["tiling", "analyze", file_in("pattern.json", json.dumps(doc)), *extra])[0]

    docs = st.one_of(*(mutate_json(b) for b in PATTERN_BASES))
    run_fuzz("tiling pattern JSON", st.tuples(docs, flags), check, 60, capsys)


# ---- workload spec files -------------------------------------------------------------------

SPEC = (ROOT / "examples" / "rmsnorm_bwd.py").read_text()
SPEC_LINES = SPEC.splitlines()
FRAGMENTS = ["raise RuntimeError('spec')", "import sys; sys.exit(3)", "1 / 0", "def (", "import nope_nope",
             "OTHER = RMSNORM_BWD", "RMSNORM_BWD = 3", "    inputs=('x', 3),", "    stages=[],",
             "from smemkit.reduction import Stat; S2 = Stat('a', 'sum', 'x')", "x = [", "\tpass"]


def test_fuzz_spec_py(capsys, file_in):
    edits = st.lists(st.tuples(st.integers(0, len(SPEC_LINES)), st.sampled_from(FRAGMENTS), st.booleans()),
                     max_size=2)

    def build(case) -> str:
        cut, changes = case
        lines = list(SPEC_LINES)
        for at, fragment, replace in changes:
            lines[at:at + int(replace)] = [fragment]
        return "\n".join(lines)[:cut]

    sources = st.tuples(st.integers(0, len(SPEC) + 1), edits).map(build)

    def check(source) -> int:
        path = file_in("myspec.py", source)
        rc, _, err = check_result(["advise", path, "--rows", "64", "--width", "1024", "--profile", "h200"])
        assert rc == 0 or path in err or "ReductionSpec" in err, err
        return rc

    run_fuzz("spec .py", sources, check, 60, capsys)


# ---- model configs -------------------------------------------------------------------------

CONFIG = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
          "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 32000, "torch_dtype": "float32",
          "tie_word_embeddings": False, "head_dim": 64}


def test_fuzz_model_config_json(capsys, file_in):
    def check(doc) -> int:
        path = file_in("config.json", json.dumps(doc))
        rc, out, _ = check_result(["offload", "plan", "--model", path, "--batch", "2", "--seq", "128",
                                   "--gpu-mem", "0.05", "--profile", "h200", "--json"])
        if rc == 0 and isinstance(doc, dict) and doc.get("torch_dtype") in ("float32", "float16", "bfloat16"):
            assert json.loads(out)["dtype"] == doc["torch_dtype"]
        return rc

    run_fuzz("model config JSON", mostly(mutate_json(CONFIG), JSON_VALUES), check, 150, capsys)


# ---- atomics service tables ----------------------------------------------------------------

def test_fuzz_atomics_service_table_json(capsys, file_in):
    base = json.loads((ATOMICS_DATA / "hand_table.json").read_text())
    commands = st.sampled_from([["atomics", "table", "--variant", "add.int32.noret", "--json"],
                                ["atomics", "analyze", str(ATOMICS_DATA / "raw_instances.csv"), "--json"],
                                ["atomics", "table", "--variant", "cas.int32.ret"]])

    def check(case) -> int:
        doc, argv = case
        return check_result([*argv, "--table", file_in("table.json", json.dumps(doc))])[0]

    run_fuzz("atomics service table JSON", st.tuples(mostly(mutate_json(base), JSON_VALUES), commands),
             check, 100, capsys)
