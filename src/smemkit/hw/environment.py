"""The ``device`` block every results file carries: GPU, driver, clocks and software versions;
and the ``provenance`` block that says which commit, command and time made the file."""

from __future__ import annotations

import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

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
# (the H200s the device tool lends ran the same kernels 4-9 % apart, commit e63f781) and the state
# it was in when the block was written.
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


# The keys of a results file's top-level ``provenance`` block (tests/cpu/test_results_provenance.py
# checks every file under benchmarks/results/h200 for them).
PROVENANCE_KEYS = ("commit", "date", "command", "gpu", "driver", "clocks", "software")
CLOCK_KEYS = ("sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz")


def git_commit() -> str | None:
    """The short commit of the git checkout smemkit is imported from, with ``-dirty`` when its
    tracked files differ from that commit (a copied tree whose git metadata is stale reads as
    dirty, not as the stale commit); None when smemkit is not imported from a checkout."""
    here = Path(__file__).resolve().parent
    exe = shutil.which("git")
    if not exe:
        return None
    try:
        head = subprocess.run([exe, "-C", str(here), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=20, check=True).stdout.strip()
        dirty = subprocess.run([exe, "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not head:
        return None
    return f"{head}-dirty" if dirty else head


def provenance(device: dict, argv: Sequence[str] | None = None) -> dict:
    """The ``provenance`` block of a results file: commit (:func:`git_commit`), UTC time, the
    command line (``argv``, the script first; default ``sys.argv``), and the GPU, driver, clocks
    and software versions of ``device`` (the file's :func:`device_block`, passed in so that
    nvidia-smi is asked once)."""
    return {
        "commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join([Path(sys.executable).name, *(sys.argv if argv is None else argv)]),
        "gpu": device.get("gpu"),
        "driver": device.get("driver"),
        "clocks": {key: device.get(key) for key in CLOCK_KEYS},
        "software": device.get("software"),
    }
