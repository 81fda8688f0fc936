"""DAK's per-operation cost model (paper §4.2): one op reads its bytes from HBM and host at once.

An operation holds ``W`` bytes (weights, or its layer's KV cache) and does ``C`` FLOPs. With a
fraction ``x`` of its bytes in pinned host memory, the direct-access kernel streams both parts
concurrently while the tensor cores compute, so its time is the slowest of the three::

    t(x) = max(C / F, (1 - x) W / B_g, x W / B_h)

``F`` is the dense bf16 tensor rate, ``B_g`` the HBM bandwidth, ``B_h`` the host link. Each term
is affine in the offloaded bytes ``y = x W``, so ``t`` is convex and piecewise linear in ``y`` with
at most three slopes: ``-1/B_g`` (HBM-bound, offloading helps), ``0`` (compute hides both reads)
and ``+1/B_h`` (host-bound). The slopes are the same for every dense op; that is why a greedy
planner can be exact (see ``planner``).

A mixture-of-experts layer's experts are one op that reads only the experts its tokens are routed
to: a share ``f`` (``read_fraction``) of its bytes per step, from either part. Its reads then take
``f (1 - x) W / B_g`` and ``f x W / B_h``, so its slopes are ``-f/B_g`` and ``+f/B_h``: per byte
stored, the cheapest place for host-bound bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import DeviceProfile, profile_for_gpu_name


@dataclass(frozen=True)
class Op:
    """One operation of a decode step: ``weight_bytes`` stored, ``read_fraction`` of them read per
    step (1 for a dense op; the routed share for an experts op), ``flops`` done."""

    name: str
    kind: str
    weight_bytes: float
    flops: float
    layer: int | None = None
    read_fraction: float = 1.0

    def __post_init__(self) -> None:
        for label, value in (("weight_bytes", self.weight_bytes), ("flops", self.flops)):
            if not (math.isfinite(value) and value >= 0):
                raise InvalidArgumentError(f"op '{self.name}': {label} must be finite and >= 0, got {value}")
        if not (math.isfinite(self.read_fraction) and 0 < self.read_fraction <= 1):
            raise InvalidArgumentError(
                f"op '{self.name}': read_fraction must be in (0, 1], got {self.read_fraction}")

    @property
    def read_bytes(self) -> float:
        """Bytes one step reads (``read_fraction`` of ``weight_bytes``)."""
        return self.weight_bytes * self.read_fraction


@dataclass(frozen=True)
class Hardware:
    """The three rates the model needs, in bytes/s and FLOP/s, each with where it came from."""

    hbm_bytes_per_s: float
    host_bytes_per_s: float
    flops_per_s: float
    sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for label in ("hbm_bytes_per_s", "host_bytes_per_s", "flops_per_s"):
            value = getattr(self, label)
            if not (math.isfinite(value) and value > 0):
                raise InvalidArgumentError(f"{label} must be a finite number > 0, got {value}")

    @property
    def balanced_ratio(self) -> float:
        """B_h/(B_h+B_g): the ratio at which a memory-bound op's host and HBM reads end together."""
        return self.host_bytes_per_s / (self.host_bytes_per_s + self.hbm_bytes_per_s)


def op_time(op: Op, x: float, hw: Hardware) -> float:
    """Predicted seconds for ``op`` with a fraction ``x`` of its bytes in host memory."""
    return max(op.flops / hw.flops_per_s,
               (1.0 - x) * op.read_bytes / hw.hbm_bytes_per_s,
               x * op.read_bytes / hw.host_bytes_per_s)


@dataclass(frozen=True)
class TurningPoints:
    """Where an op's curve bends: t falls on [0, lo], is flat on [lo, hi], rises on [hi, 1]."""

    lo: float
    hi: float

    @property
    def bound(self) -> str:
        """'memory' when no ratio lets compute hide the reads, 'compute' when it does from x = 0,
        'mixed' when HBM-bound at x = 0 but compute-bound once some bytes move to the host."""
        if self.lo == self.hi:
            return "memory"
        return "compute" if self.lo == 0.0 else "mixed"


def turning_points(op: Op, hw: Hardware) -> TurningPoints:
    """The two turning points of DAK's Fig. 6, computed from this op's own curve.

    The best pure-memory time ``W/(B_g+B_h)`` is reached at ``B_h/(B_h+B_g)``. If compute takes
    longer than that, the curve has a plateau at ``C/F`` from where HBM time drops to it
    (``1 - C B_g/(F W)``) to where host time reaches it (``C B_h/(F W)``).
    """
    if op.weight_bytes == 0:
        return TurningPoints(0.0, 1.0)
    t_comp = op.flops / hw.flops_per_s
    t_hbm = op.read_bytes / hw.hbm_bytes_per_s
    t_host = op.read_bytes / hw.host_bytes_per_s
    if t_comp <= t_hbm * t_host / (t_hbm + t_host):
        r = hw.balanced_ratio
        return TurningPoints(r, r)
    lo = max(0.0, 1.0 - t_comp / t_hbm)
    hi = min(1.0, t_comp / t_host)
    return TurningPoints(lo, hi)


# Dense bf16 tensor-core rates (no sparsity) for the embedded profiles. Overridable (--tflops).
DEFAULT_TFLOPS: dict[str, tuple[float, str]] = {
    "h200_sxm": (790.0, "measured on an H200: 8192^3 bf16 torch.matmul, 769-798 TFLOP/s on random "
                 "data; datasheet 989"),
    "h100_sxm": (989.4, "H100 SXM datasheet, dense bf16 tensor (1979 with sparsity); not measured"),
    "rtx5090": (209.5, "RTX 5090 datasheet, dense FP16/BF16 tensor with FP32 accumulate; not measured"),
}

# Host-link fallbacks for profiles that carry no measured host copy rate: PCIe Gen5 x16 is 64 GB/s
# per direction; DAK's "ideal" lines use 80 % of a link's peak, so 51.2 GB/s.
DEFAULT_HOST_GBPS: dict[str, tuple[float, str]] = {
    "h100_sxm": (51.2, "assumed: 80 % of PCIe Gen5 x16 (64 GB/s); not measured"),
    "rtx5090": (51.2, "assumed: 80 % of PCIe Gen5 x16 (64 GB/s); not measured"),
}


def _profile_key(profile: DeviceProfile) -> str:
    if profile.name in DEFAULT_TFLOPS:
        return profile.name
    return profile_for_gpu_name(profile.gpu) or profile.name


def hardware_from_profile(profile: DeviceProfile, *, tflops: float | None = None,
                          host_gbps: float | None = None, hbm_tbps: float | None = None) -> Hardware:
    """The planner's rates from a device profile; each figure can be overridden.

    ``B_g`` is the profile's achieved HBM rate, ``B_h`` its pinned host-to-device copy rate (the
    closest measured figure to a TMA host read), ``F`` the table above unless ``tflops`` is given.
    """
    key = _profile_key(profile)
    sources: dict[str, str] = {}
    if hbm_tbps is None:
        hbm_tbps = profile.hbm_tbps
        sources["B_g"] = f"profile {profile.name}: {profile.provenance.get('hbm_tbps', 'hbm_tbps')}"
    else:
        sources["B_g"] = "--hbm-tbps"
    if host_gbps is None:
        if profile.host_copy_gbps is not None:
            host_gbps = profile.host_copy_gbps
            sources["B_h"] = (f"profile {profile.name}: "
                              f"{profile.provenance.get('host_copy_gbps', 'host_copy_gbps')}")
        elif key in DEFAULT_HOST_GBPS:
            host_gbps, sources["B_h"] = DEFAULT_HOST_GBPS[key]
        else:
            raise InvalidArgumentError(
                f"profile '{profile.name}' has no host copy rate; pass --host-gbps (GB/s, > 0)")
    else:
        sources["B_h"] = "--host-gbps"
    if tflops is None:
        if key not in DEFAULT_TFLOPS:
            raise InvalidArgumentError(
                f"no default bf16 TFLOP/s for profile '{profile.name}' (known: "
                f"{', '.join(DEFAULT_TFLOPS)}); pass --tflops (dense bf16 TFLOP/s, > 0)")
        tflops, sources["F"] = DEFAULT_TFLOPS[key]
    else:
        sources["F"] = "--tflops"
    for label, value in (("--hbm-tbps", hbm_tbps), ("--host-gbps", host_gbps), ("--tflops", tflops)):
        if not (math.isfinite(value) and value > 0):
            raise InvalidArgumentError(f"{label} must be a finite number > 0, got {value}")
    return Hardware(hbm_bytes_per_s=hbm_tbps * 1e12, host_bytes_per_s=host_gbps * 1e9,
                    flops_per_s=tflops * 1e12, sources=sources)
