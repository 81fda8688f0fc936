"""The ``device`` block every results file carries: GPU, driver, clocks and software versions."""

from __future__ import annotations

import platform
import shutil
import subprocess

import smemkit
from smemkit.runtime.compiler import nvrtc_version_text


def _nvidia_smi(query: str) -> str | None:
    import torch

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
    try:
        import torch
    except ImportError:  # the GPU extra is not installed
        torch = None
    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "smemkit": smemkit.__version__,
        "torch": torch.__version__ if torch else None,
        "torch_cuda": torch.version.cuda if torch else None,
    }
    for module in ("triton", "cuda.core", "cuda.bindings", "numpy"):
        try:
            versions[module] = __import__(module, fromlist=["__version__"]).__version__
        except (ImportError, AttributeError):
            versions[module] = None
    versions["nvrtc"] = nvrtc_version_text()
    return versions


# nvidia-smi fields of the device block: the basics, then what tells one lent GPU from another
# (the H200s the device tool lends ran the same kernels 4-9 % apart: benchmarks/results/h200/
# store_ab/) and the state it was in when the block was written.
SMI_FIELDS = (
    ("driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit",
     ("driver", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "power_limit_w")),
    ("uuid,serial,vbios_version,ecc.mode.current,temperature.gpu,power.draw,clocks_event_reasons.active",
     ("gpu_uuid", "gpu_serial", "vbios", "ecc_mode", "temperature_c", "power_draw_w", "clock_event_reasons")),
)


def device_block() -> dict:
    """GPU name, driver, SM clocks (current and max, MHz), memory and software versions, and the
    GPU's identity and state (uuid, serial, VBIOS, ECC, temperature, power, clock-event reasons)."""
    import torch

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
    for query, keys in SMI_FIELDS:  # separate queries: a field one driver lacks loses only its own
        smi = _nvidia_smi(query)
        if smi:
            fields = [f.strip() for f in smi.split(",")]
            block.update(dict(zip(keys, fields, strict=False)))
    return block
