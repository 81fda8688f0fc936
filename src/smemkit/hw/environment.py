"""The ``device`` block every results file carries: GPU, driver, clocks and software versions."""

from __future__ import annotations

import platform
import shutil
import subprocess

import torch

import smemkit


def _nvidia_smi(query: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i",
             str(torch.cuda.current_device())],
            capture_output=True, text=True, timeout=20, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def software_versions() -> dict[str, str | None]:
    """Versions of the Python packages smemkit builds on (None when not installed)."""
    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "smemkit": smemkit.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
    }
    for module in ("triton", "cuda.core", "cuda.bindings", "numpy"):
        try:
            versions[module] = __import__(module, fromlist=["__version__"]).__version__
        except (ImportError, AttributeError):
            versions[module] = None
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        versions["nvrtc"] = f"{major}.{minor}"
    except Exception:  # no NVRTC library found: compile paths will say so themselves
        versions["nvrtc"] = None
    return versions


def device_block() -> dict:
    """GPU name, driver, SM clocks (current and max, MHz), memory and software versions."""
    block: dict = {"software": software_versions()}
    if not torch.cuda.is_available():
        block["gpu"] = None
        return block
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    block.update(
        gpu=props.name,
        capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        memory_gib=round(props.total_memory / 2**30, 1),
    )
    smi = _nvidia_smi("driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit")
    if smi:
        fields = [f.strip() for f in smi.split(",")]
        keys = ("driver", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "power_limit_w")
        block.update(dict(zip(keys, fields, strict=False)))
    return block
