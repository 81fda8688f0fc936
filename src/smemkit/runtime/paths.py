"""Where the CUDA headers are, so NVRTC can compile kernels that include toolkit headers.

NVRTC does not ship ``cuda_fp16.h``, ``cooperative_groups.h`` or CCCL itself. We look, in
order, at ``$CUDA_HOME``/``$CUDA_PATH``, the directory of ``nvcc`` on ``PATH``,
``/usr/local/cuda`` and the headers of pip-installed NVIDIA wheels (``nvidia/cu13/include``,
``nvidia/cuda_runtime/include``, ``nvidia/cuda_cccl/include``). CUDA 13 moved CCCL under
``include/cccl``; both are added when present.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

PACKAGE_INCLUDE = Path(__file__).resolve().parent / "include"


def _toolkit_roots() -> list[Path]:
    roots: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]))
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    return roots


def _wheel_include_dirs() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    found: list[Path] = []
    for base in map(Path, spec.submodule_search_locations):
        for sub in ("cu13/include", "cuda_runtime/include", "cuda_cccl/include"):
            if (base / sub).is_dir():
                found.append(base / sub)
    return found


@functools.cache
def cuda_include_dirs() -> tuple[Path, ...]:
    """Include directories that hold ``cuda_runtime.h`` (and ``cccl`` beneath it), deduplicated.

    Empty when no toolkit headers are found: kernels that include only smemkit's own headers
    still compile, others fail with NVRTC's "cannot open source file" in the error.
    """
    dirs: list[Path] = []
    candidates = [root / "include" for root in _toolkit_roots()] + _wheel_include_dirs()
    for inc in candidates:
        if not (inc / "cuda_runtime.h").is_file() and not (inc / "cuda").is_dir():
            continue
        for d in (inc, inc / "cccl"):
            d = d.resolve()
            if d.is_dir() and d not in dirs:
                dirs.append(d)
        if (inc / "cuda_runtime.h").is_file():
            break  # the first full toolkit wins; mixing versions invites confusing errors
    return tuple(dirs)


def include_dirs() -> tuple[Path, ...]:
    """smemkit's vendored headers first, then the toolkit's."""
    return (PACKAGE_INCLUDE, *cuda_include_dirs())


def toolkit_header_version() -> str:
    """``CUDA_VERSION`` from the headers in use (e.g. ``13000``), or ``none``; part of cache keys."""
    for inc in cuda_include_dirs():
        header = inc / "cuda.h"
        if header.is_file():
            m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", header.read_text(errors="replace"))
            if m:
                return m.group(1)
    return "none"


# Where Nsight Compute installs itself when it is not on PATH.
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/nsight-compute*/ncu",
             "/usr/local/NVIDIA-Nsight-Compute*/ncu")


def find_tool(name: str) -> str | None:
    """An NVIDIA command-line tool (``ncu``, ``cuobjdump``, ``nvdisasm``): on PATH, in the
    toolkit's ``bin/``, in a pip-installed NVIDIA wheel's ``bin/``, or (ncu) where Nsight
    Compute installs itself. None when it is nowhere."""
    exe = shutil.which(name)
    if exe:
        return exe
    dirs = [root / "bin" for root in _toolkit_roots()]
    for base in map(Path, sys.path):
        dirs += [base / sub for sub in ("nvidia/cu13/bin", f"nvidia/cuda_{name}/bin")]
    for d in dirs:
        if (d / name).is_file() and os.access(d / name, os.X_OK):
            return str(d / name)
    if name == "ncu":
        hits = sorted(h for pattern in NCU_GLOBS for h in glob.glob(pattern))
        return hits[-1] if hits else None
    return None
