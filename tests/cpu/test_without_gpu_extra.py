"""The base install (numpy + rich, no "gpu" extra): the models, planners, analyzers and the CLI's
non-GPU commands import and run with torch and the cuda packages unimportable, and a command that
needs them says which extra to install in one line.

Each check runs in a fresh interpreter whose meta path refuses torch, triton and cuda.* the way a
missing package does (ModuleNotFoundError), so a stray module-level import anywhere on the path
fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import smemkit

SRC = Path(smemkit.__file__).resolve().parents[1]
REPO = Path(__file__).resolve().parents[2]
BLOCKED = ("torch", "triton", "cuda")

BLOCKER = f"""
import sys

class NoGpuExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NoGpuExtra())
"""
RUN_CLI = BLOCKER + """
from smemkit.cli.main import main
code = main(sys.argv[1:])
leaked = sorted(m for m in sys.modules if m.split(".")[0] in {blocked!r})
assert not leaked, leaked
sys.exit(code)
""".replace("{blocked!r}", repr(BLOCKED))


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)


def test_the_blocker_blocks():
    done = _python(BLOCKER + "import torch")
    assert done.returncode != 0 and "ModuleNotFoundError: No module named 'torch'" in done.stderr


TORCH_FREE_MODULES = ("smemkit", "smemkit.reduction", "smemkit.reduction.cost_model",
                      "smemkit.reduction.advise", "smemkit.offload", "smemkit.offload.planner",
                      "smemkit.offload.split_rule", "smemkit.tiling", "smemkit.atomics",
                      "smemkit.atomics.analysis", "smemkit.hw.profile", "smemkit.cli.main")


def test_imports_without_torch():
    code = BLOCKER + f"""
import importlib, traceback
failed = []
for name in {TORCH_FREE_MODULES!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        failed.append(name + ": " + traceback.format_exc(limit=-3))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""
    done = _python(code)
    assert done.returncode == 0, done.stdout + done.stderr


COMMANDS = [
    (["advise", "layernorm_bwd", "--rows", "2048", "--width", "65536"], "verdict: "),
    (["offload", "plan", "--model", "llama-3-8b", "--batch", "8", "--seq", "4096", "--gpu-mem", "8",
      "--profile", "h200"], "must offload 9.98 GiB"),
    (["offload", "path", "--shape", "4096x14336", "--batch", "4", "--ratio", "0.5", "--profile", "h200"],
     "path: "),
    (["tiling", "analyze", "transpose_32x32_fp32"], "32.00"),
    (["tiling", "list"], "cp_async_double_buffer"),
    (["occupancy", "--arch", "sm_90", "--threads", "256", "--regs", "64", "--smem", "49152", "--json"],
     '"blocks_per_sm": 4'),
    (["atomics", "analyze", "tests/data/atomics_hist_ncu.csv"], "the shared-atomic unit is the bottleneck"),
    (["info"], "not installed"),
]


@pytest.mark.parametrize("argv,expected", COMMANDS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_cli_runs_without_torch(argv, expected):
    done = _python(RUN_CLI, *argv)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout, done.stdout[-2000:]
    assert "Traceback" not in done.stderr


def test_advise_gives_the_same_answer_without_torch():
    """The cost model's path is the same code with or without the GPU extra: same table, same verdict."""
    argv = ["advise", "softmax_bwd", "--rows", "4096", "--width", "8192", "--profile", "h100"]
    without = _python(RUN_CLI, *argv)
    with_torch = _python("import sys, torch; from smemkit.cli.main import main; sys.exit(main(sys.argv[1:]))",
                         *argv)
    assert without.returncode == 0 and with_torch.returncode == 0, without.stderr + with_torch.stderr
    assert without.stdout == with_torch.stdout


def test_a_gpu_command_without_the_extra_says_so_in_one_line():
    done = _python(RUN_CLI, "probe")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "smemkit: error: 'smemkit probe' needs the GPU extra: pip install 'smemkit[gpu]' "
        "(torch is not installed)"]
