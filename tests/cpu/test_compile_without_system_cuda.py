"""Every kernel that includes a CUDA toolkit header compiles from the pip wheels of the "gpu" extra
alone (nvidia-cuda-runtime, nvidia-cuda-cccl), with any system toolkit hidden: CUDA_HOME and
CUDA_PATH unset and ``SMEMKIT_IGNORE_SYSTEM_CUDA=1`` (runtime.paths skips nvcc's toolkit and
/usr/local/cuda), in a fresh interpreter and an empty kernel cache.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import smemkit
from smemkit.runtime import paths

SRC = Path(smemkit.__file__).resolve().parents[1]
REPO = Path(__file__).resolve().parents[2]
KERNEL_DIRS = (SRC / "smemkit", REPO / "tests" / "gpu" / "kernels", REPO / "benchmarks" / "kernels")
_TOOLKIT_INCLUDE = re.compile(r'^\s*#\s*include\s*<(?!smemkit/)([^>]+)>', re.MULTILINE)


def toolkit_kernels() -> list[Path]:
    """The .cu files that include a header other than smemkit's own."""
    found = [p for d in KERNEL_DIRS for p in sorted(d.rglob("*.cu")) if "results" not in p.parts]
    return [p for p in found if _TOOLKIT_INCLUDE.search(p.read_text())]


COMPILE_ALL = """
import json, sys
from pathlib import Path
from smemkit.runtime.compiler import compile_module
from smemkit.runtime.paths import cuda_include_dirs

report = {"include_dirs": [str(d) for d in cuda_include_dirs()], "kernels": {}}
for path in map(Path, sys.argv[1:]):
    module = compile_module(path.read_text(), path.name, arch="sm_90a")
    report["kernels"][path.name] = sorted(module.resources)
print(json.dumps(report))
"""


def _wheel_headers_installed() -> bool:
    return any((d / "cuda_runtime.h").is_file() for d in paths._wheel_include_dirs())


def test_the_kernels_that_need_toolkit_headers_are_found():
    names = {p.name for p in toolkit_kernels()}
    assert "probe_methodology.cu" in names  # cooperative_groups.h


def test_toolkit_headers_come_from_the_wheels_alone(tmp_path):
    if not _wheel_headers_installed():
        message = ("the CUDA header wheels are not installed (nvidia-cuda-runtime, nvidia-cuda-cccl): "
                   "pip install -e '.[test]'")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    env.update({paths.IGNORE_SYSTEM_ENV: "1", "SMEMKIT_CACHE_DIR": str(tmp_path / "cache"),
                "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])})
    kernels = toolkit_kernels()
    done = subprocess.run([sys.executable, "-c", COMPILE_ALL, *map(str, kernels)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.splitlines()[-1])
    dirs = [Path(d) for d in report["include_dirs"]]
    assert dirs and all(paths.WHEEL_INCLUDE in d.as_posix() for d in dirs), dirs
    assert not any(str(d).startswith("/usr/local/cuda") for d in dirs), dirs
    assert set(report["kernels"]) == {p.name for p in kernels}
    assert "barrier_variants" in report["kernels"]["probe_methodology.cu"]
