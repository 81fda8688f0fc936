"""benchmarks/sanitizer.py without a GPU: --list, the coverage of the shipped kernels, the parser
of compute-sanitizer's summaries (on hand-written transcripts in the tool's format), the refusal
when the tool is missing, and the parent's records from a stand-in sanitizer."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "sanitizer.py"


@pytest.fixture(scope="module")
def driver():
    spec = importlib.util.spec_from_file_location("sanitizer_driver", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


MEMCHECK_CLEAN = """\
========= COMPUTE-SANITIZER
ran 12 cases
========= ERROR SUMMARY: 0 errors
"""

MEMCHECK_ERRORS = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at rr_lars_staged+0x1a30
=========     by thread (31,0,0) in block (2,0,0)
=========     Address 0x7f1c2e000ffc is out of bounds
=========     and is 4 bytes after the nearest allocation at 0x7f1c2e000000 of size 4092 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernelEx [0x2f5e13] in libcuda.so.1
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure"
=========
========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations
========= ERROR SUMMARY: 2 errors
"""

RACECHECK_HAZARDS = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at rr_softmax_bwd_cluster_p4+0x90
=========     and Read access at rr_softmax_bwd_cluster_p4+0x100 [508 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

RACECHECK_CLEAN = """\
========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""

INITCHECK_ONE = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at split_gemv_nt1+0x3c0
=========     by thread (122,0,0) in block (0,0,0)
=========     Address 0x7f936fa001e8
=========
========= ERROR SUMMARY: 1 error
"""


def test_summaries_are_parsed(driver):
    assert driver.parse_summary(MEMCHECK_CLEAN) == {"errors": 0, "summaries": 1}
    errors = driver.parse_summary(MEMCHECK_ERRORS)
    assert errors["errors"] == 2 and errors["leaked_bytes"] == 1024
    assert driver.parse_summary(INITCHECK_ONE)["errors"] == 1
    race = driver.parse_summary(RACECHECK_HAZARDS)
    assert race["racecheck"] == {"hazards": 1, "errors": 1, "warnings": 0} and race["errors"] == 1
    assert driver.parse_summary(RACECHECK_CLEAN)["errors"] == 0
    both = driver.parse_summary(RACECHECK_HAZARDS + "========= ERROR SUMMARY: 3 errors\n")
    assert both["errors"] == 3  # the tool's own error total wins over the race count
    assert driver.parse_summary(MEMCHECK_ERRORS + MEMCHECK_CLEAN)["errors"] == 2  # two processes
    died = "========= COMPUTE-SANITIZER\nSegmentation fault (core dumped)\n"
    assert driver.parse_summary(died) == {"errors": None, "summaries": 0}


def test_the_excerpt_keeps_the_reports_not_the_frame(driver):
    lines = driver.report_excerpt(MEMCHECK_ERRORS)
    assert lines[0] == "========= Invalid __global__ read of size 4 bytes"
    assert not any("SUMMARY" in ln or ln.strip("= ") in ("", "COMPUTE-SANITIZER") for ln in lines)
    assert driver.report_excerpt(MEMCHECK_CLEAN) == []


def test_list_runs_without_a_gpu_and_names_every_group_and_variant(driver):
    done = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for name in driver.groups():
        assert f"\n{name}  (" in f"\n{out}", name
    for tool in driver.TOOLS:
        under = [g for g in driver.groups().values() if tool in g.tools]
        assert out.count(f"  {tool} ") == len(under), tool
    controls = [n for n in driver.groups() if n.startswith("control.")]
    assert len(controls) == 4 and all(driver.groups()[n].tools == ("racecheck",) for n in controls)
    for variant, P in driver.REDUCTION_VARIANTS:
        assert driver._variant_label(variant, P) in out
    assert "triton" not in out  # excluded by default (Triton-generated, not smemkit's CUDA)
    with_triton = {c.variant for c in driver.reduction_cases("lars", "memcheck", True)}
    assert "triton" in with_triton


def test_every_shipped_kernel_source_and_variant_kind_is_covered(driver):
    from smemkit.reduction.codegen import VARIANTS

    sources = " ".join(g.sources for g in driver.groups().values())
    shipped = sorted(p.relative_to(ROOT / "src" / "smemkit").as_posix()
                     for p in (ROOT / "src" / "smemkit").rglob("*.cu"))
    assert shipped and all(s in sources for s in shipped), shipped
    kinds = {v.split("_")[0] if not v.startswith("reread_l2") else "reread_l2"
             for v, _ in driver.REDUCTION_VARIANTS}
    assert kinds == set(VARIANTS) - {"triton"}
    assert {P for v, P in driver.REDUCTION_VARIANTS if v == "cluster"} == {2, 4, 8, 16}
    for tool in driver.SLOW_TOOLS:  # fewer shapes on the slow tools, never fewer variants
        slow = {c.variant for c in driver.reduction_cases("lars", tool, False)}
        assert slow == {c.variant for c in driver.reduction_cases("lars", "memcheck", False)}
    assert {1, 31} <= set(driver.SLOW_WIDTHS) and any(n % 4 for n in driver.SLOW_WIDTHS if n > 31)


def test_the_command_is_the_documented_one(driver):
    child = driver.child_args("probe.hw", "racecheck", False, Path("/tmp/r.json"))
    cmd = driver.sanitizer_command("/opt/cs/compute-sanitizer", "racecheck", child)
    assert cmd[:9] == ["/opt/cs/compute-sanitizer", "--tool", "racecheck", "--report-api-errors",
                       "no", "--print-limit", "100", "--error-exitcode", "99"]
    assert cmd[cmd.index(sys.executable) + 1:][:3] == [str(SCRIPT), "--child", "probe.hw"]


def test_a_missing_sanitizer_is_recorded_and_refused(driver, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(driver, "find_sanitizer", lambda: (None, ["PATH", "/usr/local/cuda/bin"]))
    out = tmp_path / "sanitizer.json"
    assert driver.main(["--out", str(out)]) == 2
    data = json.loads(out.read_text())
    assert data["refused"].startswith("compute-sanitizer was not found (looked at: PATH; /usr/local")
    assert "pip install nvidia-cuda-sanitizer-api" in data["refused"]
    assert data["records"] == [] and data["provenance"]["command"].endswith(f"--out {out}")
    assert "compute-sanitizer was not found" in capsys.readouterr().err


FAKE_SANITIZER = """#!{python}
# Stands in for compute-sanitizer: writes the child's case report and a transcript, as the tool
# would after running it; racecheck "finds" a hazard.
import json, sys
argv = sys.argv[1:]
tool = argv[argv.index("--tool") + 1]
out = argv[argv.index("--child-out") + 1]
json.dump({{"ran": ["k [x]"], "skipped": {{"k2 [y]": "illegal here"}}, "failed": {{}}}}, open(out, "w"))
print("========= COMPUTE-SANITIZER")
if tool == "racecheck":
    print("========= Error: Race reported between Write access at k+0x90")
    print("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)")
    sys.exit(99)
print("========= ERROR SUMMARY: 0 errors")
"""


def test_the_parent_writes_one_record_per_group_and_tool(driver, monkeypatch, tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setattr(driver, "find_sanitizer", lambda: (str(fake), ["test"]))
    monkeypatch.setattr(driver, "sanitizer_version", lambda exe: "stand-in 0.0")
    out = tmp_path / "sanitizer.json"
    code = driver.main(["--out", str(out), "--groups", "^probe.hw$", "--jobs", "2",
                        "--logs", str(tmp_path / "logs")])
    data = json.loads(out.read_text())
    assert code == 1  # a hazard, and the plain run has no GPU here
    by_tool = {r["tool"]: r for r in data["records"]}
    assert sorted(by_tool) == sorted(driver.TOOLS)
    assert by_tool["racecheck"]["errors"] == 1 and by_tool["racecheck"]["exit_code"] == 99
    assert not by_tool["racecheck"]["clean"] and by_tool["racecheck"]["report_excerpt"]
    for tool in ("memcheck", "synccheck", "initcheck"):
        rec = by_tool[tool]
        assert rec["clean"] and rec["errors"] == 0 and rec["cases"]["ran"] == 1, rec
        assert rec["cases"]["skipped"] == {"k2 [y]": "illegal here"}
        assert "smem_chase" in rec["variants"] and rec["wall_s"] >= 0
        assert rec["command"].startswith(f"{fake} --tool {tool} --report-api-errors no")
    assert data["summary"]["runs"] == 4 and data["summary"]["clean"] == 3
    assert data["provenance"]["sanitizer"] == {"path": str(fake), "version": "stand-in 0.0",
                                               "flags": list(driver.SANITIZER_FLAGS)}
    (plain,) = data["plain"]
    if not plain["clean"]:  # no GPU here: the child says so rather than crash
        assert data["summary"]["plain_failures"] == ["probe.hw"]
        assert plain["cases"]["failed"] == {"probe.hw": "no CUDA GPU is visible to this process"}


@pytest.mark.parametrize("layout", ["nvidia/cu13/bin/compute-sanitizer",
                                    "nvidia/cuda_sanitizer_api/compute-sanitizer/compute-sanitizer"])
def test_the_pip_wheels_layouts_are_found(driver, monkeypatch, tmp_path, layout):
    """The nvidia-cuda-sanitizer-api wheel puts a wrapper at nvidia/cu13/bin (13.x); older wheels
    keep the binary in nvidia/<package>/compute-sanitizer/."""
    exe = tmp_path / layout
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    found, looked = driver.find_sanitizer()
    if not Path("/usr/local/cuda/bin/compute-sanitizer").exists():
        assert found == str(exe), looked


def _smemkit_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every ``from smemkit... import name`` in ``path``, also inside
    functions: the driver's cases import lazily, so a moved name fails only on the GPU."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("smemkit"):
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("script", ["sanitizer.py", "offload_e2e.py", "offload_ops.py",
                                    "offload_attention.py", "reduction.py", "tiling_validate.py"])
def test_every_lazy_smemkit_import_of_a_gpu_script_resolves(script):
    pytest.importorskip("torch")
    import importlib

    missing = []
    for line, module, name in _smemkit_imports(ROOT / "benchmarks" / script):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:  # a whole module missing is as bad as a name
            missing.append(f"{script}:{line}: {module} ({exc})")
            continue
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script}:{line}: {module}.{name}")
    assert not missing, "imports that fail where the script runs:\n" + "\n".join(missing)
