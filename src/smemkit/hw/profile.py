"""Device profiles: the figures every cost model in smemkit reasons from.

A profile is plain data (JSON on disk). Embedded ones ship in ``hw/profiles/``: the H100 SXM and
RTX 5090 from the CREDIT paper's Table II (seed 000) and the H200 measured by ``smemkit probe``.
Each profile carries ``provenance``: for every figure, where it came from.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from smemkit.errors import InvalidArgumentError


@dataclass(frozen=True)
class DsmemPrimitives:
    """CREDIT Table II: shared-memory primitive costs on one SM pair of a cluster.

    Latencies are cycles per dependent 32-bit load; rates are bytes per SM cycle issued by one
    CTA of 256 threads doing 32-bit accesses; barrier cycles are one arrive+wait per cluster size.
    """

    local_load_cycles: float
    remote_load_cycles: float
    local_read_bpc: float
    remote_read_bpc: float
    local_store_bpc: float
    remote_store_bpc: float
    barrier_cycles: dict[int, float]


@dataclass(frozen=True)
class DeviceProfile:
    """One GPU's figures. Bandwidths are achieved (measured) values, not datasheet peaks."""

    name: str
    gpu: str
    compute_capability: tuple[int, int]
    sm_count: int
    sm_clock_ghz: float
    smem_per_sm_bytes: int
    smem_per_block_bytes: int
    l2_bytes: int
    hbm_tbps: float
    host_copy_gbps: float | None
    host_sm_load_gbps: dict[int, float]
    max_cluster_size: int
    dsmem: DsmemPrimitives
    provenance: dict[str, str] = field(default_factory=dict)
    # Optional: the host-read congestion window chosen by the offload congestion probe
    # (smemkit.offload.congestion: host_ctas, window_bytes, host_gbps, hbm_drop, source).
    host_congestion: dict | None = None

    @property
    def supports_clusters(self) -> bool:
        return self.compute_capability >= (9, 0)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DeviceProfile:
        try:
            raw = dict(data)
            prim = dict(raw.pop("dsmem"))
            prim["barrier_cycles"] = {int(k): float(v) for k, v in prim["barrier_cycles"].items()}
            raw["compute_capability"] = tuple(raw["compute_capability"])
            raw["host_sm_load_gbps"] = {
                int(k): float(v) for k, v in raw.get("host_sm_load_gbps", {}).items()
            }
            return cls(dsmem=DsmemPrimitives(**prim), **raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"not a valid smemkit device profile: {exc}") from exc

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> DeviceProfile:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise InvalidArgumentError(f"cannot read device profile {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidArgumentError(f"{path} is not a device profile (a JSON object)")
        return cls.from_dict(data.get("profile", data))

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.sm_clock_ghz * 1e3)


def builtin_profiles() -> dict[str, DeviceProfile]:
    """The embedded profiles by name (``h100_sxm``, ``rtx5090``, ``h200_sxm`` when measured)."""
    found: dict[str, DeviceProfile] = {}
    for entry in resources.files("smemkit").joinpath("hw/profiles").iterdir():
        if entry.name.endswith(".json"):
            profile = DeviceProfile.from_dict(json.loads(entry.read_text()))
            found[profile.name] = profile
    return dict(sorted(found.items()))


ALIASES = {"h100": "h100_sxm", "h200": "h200_sxm", "5090": "rtx5090"}
# Names as torch/nvidia-smi report them. The H100 profile is the SXM part's: the PCIe and NVL
# parts (fewer SMs, other clocks) and Grace-Hopper (GH200) do not match it.
_GPU_NAME_KEYS = (("NVIDIA H200", "h200_sxm"), ("H100 80GB HBM3", "h100_sxm"),
                  ("H100 SXM", "h100_sxm"), ("RTX 5090", "rtx5090"))
DEFAULT_PROFILE = "h200_sxm"


def profile_for_gpu_name(gpu_name: str) -> str | None:
    """The embedded profile that describes a GPU reported as ``gpu_name``, if any."""
    if "GH200" in gpu_name or "NVL" in gpu_name or "PCIe" in gpu_name:
        return None
    for needle, key in _GPU_NAME_KEYS:
        if needle in gpu_name:
            return key
    return None


def select_profile(spec: str | None = None) -> tuple[DeviceProfile, str]:
    """The profile to use and why: an explicit name/alias/JSON path, else the current GPU's,
    else the default (our measured H200). Returns (profile, reason)."""
    profiles = builtin_profiles()
    if spec:
        key = ALIASES.get(spec.lower(), spec.lower())
        if key in profiles:
            return profiles[key], f"embedded profile '{key}' (asked for)"
        if Path(spec).is_file():
            return DeviceProfile.load(spec), f"profile file {spec}"
        raise InvalidArgumentError(
            f"profile '{spec}' is neither an embedded profile ({', '.join(profiles)} or aliases "
            f"{', '.join(ALIASES)}) nor a JSON file"
        )
    from smemkit.runtime.device import gpu_available

    if gpu_available():
        import torch

        gpu_name = torch.cuda.get_device_name()
        key = profile_for_gpu_name(gpu_name)
        if key in profiles:
            return profiles[key], f"embedded profile '{key}' matches the current GPU '{gpu_name}'"
        reason = f"no embedded profile matches '{gpu_name}' (run `smemkit probe`)"
    else:
        reason = "no GPU visible"
    key = DEFAULT_PROFILE if DEFAULT_PROFILE in profiles else next(iter(profiles))
    return profiles[key], f"{reason}; using the default embedded profile '{key}'"
