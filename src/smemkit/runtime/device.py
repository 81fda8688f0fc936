"""What GPU is present and whether it can do what a launch asks, checked before the driver is.

Everything here answers without touching CUDA when torch reports no GPU, so the CPU-only
paths (cost models, compile-only checks) never need a driver; without torch (the GPU extra not
installed) :func:`gpu_available` is False and the rest import torch only when called.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from smemkit.errors import UnsupportedDeviceError

CLUSTER_MIN_CAPABILITY = (9, 0)
PORTABLE_CLUSTER_MAX = 8
NON_PORTABLE_CLUSTER_MAX = 16


@dataclass(frozen=True)
class GpuInfo:
    """Facts about one visible GPU, read once from the driver."""

    index: int
    name: str
    capability: tuple[int, int]
    sm_count: int
    smem_per_sm: int
    smem_per_block_optin: int
    l2_bytes: int
    sm_clock_khz: int

    @property
    def supports_clusters(self) -> bool:
        return self.capability >= CLUSTER_MIN_CAPABILITY


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:  # no GPU extra: no GPU smemkit could use
        return False
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def require_gpu() -> int:
    """Index of the current CUDA device, or a clear error when there is none."""
    import torch

    if not gpu_available():
        raise UnsupportedDeviceError(
            "no CUDA GPU is visible (torch.cuda.is_available() is False): smemkit's kernels "
            "need an NVIDIA GPU (compute capability >= 9.0 for cluster kernels); the cost "
            "models and compile-only checks work without one"
        )
    return torch.cuda.current_device()


@cache
def gpu_info(index: int) -> GpuInfo:
    """Properties of GPU ``index`` (cached: they do not change while the process lives)."""
    import torch
    from cuda.bindings import driver

    props = torch.cuda.get_device_properties(index)

    def attribute(attr: driver.CUdevice_attribute) -> int:
        err, value = driver.cuDeviceGetAttribute(attr, index)
        if int(err) != 0:
            raise UnsupportedDeviceError(f"cuDeviceGetAttribute({attr.name}) failed: {err}")
        return int(value)

    torch.cuda.init()
    a = driver.CUdevice_attribute
    return GpuInfo(
        index=index,
        name=props.name,
        capability=(props.major, props.minor),
        sm_count=props.multi_processor_count,
        smem_per_sm=attribute(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        smem_per_block_optin=attribute(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        l2_bytes=attribute(a.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        sm_clock_khz=attribute(a.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
    )


def require_sm90(index: int, what: str, hint: str = "") -> GpuInfo:
    """GPU ``index``'s info; raises naming ``what`` (the feature and the instructions it uses) unless
    the GPU has compute capability 9.0 or newer (mbarriers, bulk and tensor copies, clusters)."""
    info = gpu_info(index)
    if not info.supports_clusters:
        raise UnsupportedDeviceError(
            f"{what}: compute capability 9.0 or newer is needed; GPU {index} '{info.name}' is "
            f"sm_{info.capability[0]}{info.capability[1]}{hint}")
    return info


def require_cluster_support(cluster: int, index: int) -> None:
    """Raise unless GPU ``index`` can launch clusters of ``cluster`` CTAs."""
    if cluster <= 1:
        return
    require_sm90(index, f"cluster size {cluster} (thread-block clusters)", ": use a non-cluster variant")
    if cluster > NON_PORTABLE_CLUSTER_MAX:
        raise UnsupportedDeviceError(
            f"cluster size {cluster} exceeds the hardware maximum of {NON_PORTABLE_CLUSTER_MAX}"
        )
