"""Device profiles: the figures every cost model in smemkit reasons from.

A profile is plain data (JSON on disk). Embedded ones ship in ``hw/profiles/``: the H100 SXM and
RTX 5090 from the CREDIT paper's Table II and the H200 measured by ``smemkit probe``. Each
profile carries ``provenance``: for every figure, where it came from. A profile read from JSON is
checked field by field (:meth:`DeviceProfile.from_dict`): a wrong type, a count that is not a
positive integer, a rate that is not a finite number in range, a missing or unknown field is an
InvalidArgumentError naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from smemkit.errors import InvalidArgumentError, check_int_range, check_number_range, is_int
from smemkit.inputs import existing_file, read_text


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
    def from_dict(cls, data: object, source: str = "the data") -> DeviceProfile:
        """A profile from its JSON form; every field is checked (see :func:`_checked_fields`)
        and an InvalidArgumentError names ``source`` and the first field that is missing or
        out of range."""
        try:
            return cls(**_checked_fields(data))
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{source} is not a valid smemkit device profile: {exc}") from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> DeviceProfile:
        text = read_text(path, "device profile")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InvalidArgumentError(f"cannot read device profile {path}: not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InvalidArgumentError(f"{path} is not a device profile (a JSON object)")
        return cls.from_dict(data.get("profile", data), str(path))

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.sm_clock_ghz * 1e3)


# What a profile may hold. The ranges are wide (any GPU of the coming decades fits them) but
# finite, so no model built on a profile divides by zero or overflows a float.
_COUNTS = {"sm_count": (1, 100_000), "smem_per_sm_bytes": (1024, 2**30),
           "smem_per_block_bytes": (1024, 2**30), "l2_bytes": (1, 2**40), "max_cluster_size": (1, 64)}
_RATES = {"sm_clock_ghz": (1e-3, 100.0), "hbm_tbps": (1e-3, 1e3), "host_copy_gbps": (1e-3, 1e5)}
_HOST_LOAD_GBPS = (1e-3, 1e5)
_DSMEM_RATES = dict.fromkeys(("local_load_cycles", "remote_load_cycles", "local_read_bpc",
                              "remote_read_bpc", "local_store_bpc", "remote_store_bpc"), (1e-3, 1e6))
_BARRIER_CYCLES = (1e-3, 1e9)
_CONGESTION_COUNTS = ("host_ctas", "window_bytes", "split_gemv_host_ctas", "split_gemv_window_bytes")


def _fields(cls) -> tuple[set[str], set[str]]:
    """(all field names, required field names) of a profile dataclass."""
    every = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return every, required


def _object(data: object, where: str, cls) -> dict:
    """``data`` as a dict holding every required field of ``cls`` and no unknown one."""
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{where} must be a JSON object, got {type(data).__name__}")
    every, required = _fields(cls)
    missing = sorted(required - set(data))
    if missing:
        raise InvalidArgumentError(f"{where} lacks field(s) {', '.join(map(repr, missing))}; it needs "
                                   f"{', '.join(sorted(required))}")
    unknown = sorted(set(data) - every)
    if unknown:
        raise InvalidArgumentError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}; "
                                   f"allowed: {', '.join(sorted(every))}")
    return dict(data)


def _rate_table(value: object, label: str, bounds: tuple[float, float]) -> dict[int, float]:
    """``{"P": rate}`` (JSON keys are strings) -> ``{P: rate}``, P positive integers, rates in
    ``bounds``."""
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{label} must be an object of positive integer keys to rates, "
                                   f"got {value!r}")
    out = {}
    for key, rate in value.items():
        text = str(key)
        if not text.isdigit() or int(text) < 1:
            raise InvalidArgumentError(f"{label} key {key!r} must be a positive integer")
        out[int(text)] = check_number_range(f"{label}[{text}]", rate, *bounds)
    return out


def _checked_fields(data: object) -> dict:
    """The constructor arguments of a DeviceProfile from its JSON form, every field checked:
    counts are integers and rates finite numbers in the ranges above, names non-empty strings."""
    raw = _object(data, "the profile", DeviceProfile)
    for label in ("name", "gpu"):
        if not isinstance(raw[label], str) or not raw[label].strip():
            raise InvalidArgumentError(f"field '{label}' must be a non-empty string, "
                                       f"got {raw[label]!r}")
    cc = raw["compute_capability"]
    if not (isinstance(cc, (list, tuple)) and len(cc) == 2 and all(is_int(v) and v >= 0 for v in cc)
            and cc[0] >= 1):
        raise InvalidArgumentError("field 'compute_capability' must be [major, minor], "
                                   f"two integers with major >= 1, got {cc!r}")
    raw["compute_capability"] = (cc[0], cc[1])
    for label, (low, high) in _COUNTS.items():
        check_int_range(f"field '{label}'", raw[label], low, high)
    if raw["smem_per_block_bytes"] > raw["smem_per_sm_bytes"]:
        raise InvalidArgumentError(f"smem_per_block_bytes ({raw['smem_per_block_bytes']}) "
                                   f"exceeds smem_per_sm_bytes ({raw['smem_per_sm_bytes']})")
    for label, (low, high) in _RATES.items():
        if label == "host_copy_gbps" and raw[label] is None:  # not measured (Table II profiles)
            continue
        raw[label] = check_number_range(f"field '{label}'", raw[label], low, high)
    raw["host_sm_load_gbps"] = _rate_table(raw["host_sm_load_gbps"], "field 'host_sm_load_gbps'",
                                           _HOST_LOAD_GBPS)
    prim = _object(raw["dsmem"], "field 'dsmem'", DsmemPrimitives)
    for label, (low, high) in _DSMEM_RATES.items():
        prim[label] = check_number_range(f"field 'dsmem.{label}'", prim[label], low, high)
    prim["barrier_cycles"] = _rate_table(prim["barrier_cycles"], "field 'dsmem.barrier_cycles'",
                                         _BARRIER_CYCLES)
    raw["dsmem"] = DsmemPrimitives(**prim)
    provenance = raw.get("provenance", {})
    if not isinstance(provenance, dict) or not all(isinstance(v, str) for v in provenance.values()):
        raise InvalidArgumentError("field 'provenance' must be an object of figure -> text")
    congestion = raw.get("host_congestion")
    if congestion is not None:
        if not isinstance(congestion, dict):
            raise InvalidArgumentError("field 'host_congestion' must be an object or null")
        for label in _CONGESTION_COUNTS:
            if label in congestion:
                check_int_range(f"field 'host_congestion.{label}'", congestion[label], 1, 2**31)
        if "host_gbps" in congestion:
            check_number_range("field 'host_congestion.host_gbps'", congestion["host_gbps"],
                               *_HOST_LOAD_GBPS)
    return raw


def builtin_profiles() -> dict[str, DeviceProfile]:
    """The embedded profiles by name (``h100_sxm``, ``h200_sxm``, ``rtx5090``)."""
    found: dict[str, DeviceProfile] = {}
    for entry in resources.files("smemkit").joinpath("hw/profiles").iterdir():
        if entry.name.endswith(".json"):
            profile = DeviceProfile.from_dict(json.loads(entry.read_text()), f"embedded profile {entry.name}")
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
        if existing_file(spec) is not None:
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
