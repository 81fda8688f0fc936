"""Loading compiled kernels on the GPU and launching them on torch's current stream.

A :class:`KernelModule` is CUDA source plus compile-time defines; :meth:`KernelModule.function`
gives a :class:`Kernel` whose :meth:`Kernel.launch` checks the request (GPU present, cluster
support, shared-memory limit, argument types) before the driver sees it, raises the kernel's
dynamic shared-memory attribute once per device and only upward, and sets the non-portable
cluster attribute when a cluster of more than 8 CTAs is asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.runtime.compiler import CompiledModule, arch_for_capability, compile_module
from smemkit.runtime.device import (
    PORTABLE_CLUSTER_MAX,
    gpu_info,
    require_cluster_support,
    require_gpu,
)

if TYPE_CHECKING:
    import torch

# Scalar parameter kinds and the numpy type cuda.core packs each one as.
SCALAR_TYPES: dict[str, type] = {
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
    "f32": np.float32,
    "f64": np.float64,
}
PARAM_KINDS = ("ptr", *SCALAR_TYPES)


_STREAMS: dict[int, object] = {}


def _cuda_core_stream(stream: torch.cuda.Stream):
    """A cuda.core view of a torch stream (cached by handle; torch owns the stream)."""
    from cuda.core import Stream

    handle = int(stream.cuda_stream)
    if handle not in _STREAMS:
        _STREAMS[handle] = Stream.from_handle(handle)
    return _STREAMS[handle]


@dataclass
class KernelModule:
    """CUDA source compiled on demand for the current GPU's architecture (and cached)."""

    source: str
    label: str
    defines: dict[str, object] = field(default_factory=dict)
    _compiled: dict[str, CompiledModule] = field(default_factory=dict, repr=False)
    _objects: dict[tuple[str, int], object] = field(default_factory=dict, repr=False)
    # Attributes live on the loaded kernel, which every Kernel of this module for that name and
    # device shares: what was applied is kept here, so no Kernel lowers another's setting.
    _smem_raised: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)
    _nonportable: set[tuple[str, int]] = field(default_factory=set, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def compile(self, arch: str) -> CompiledModule:
        if arch not in self._compiled:
            self._compiled[arch] = compile_module(
                self.source, self.label, arch=arch, defines=self.defines
            )
        return self._compiled[arch]

    def function(self, name: str, params: Sequence[str]) -> Kernel:
        """The ``extern "C"`` kernel ``name`` taking parameters of kinds ``params``."""
        bad = [p for p in params if p not in PARAM_KINDS]
        if bad:
            raise InvalidArgumentError(f"unknown parameter kinds {bad}; allowed: {PARAM_KINDS}")
        return Kernel(self, name, tuple(params))

    def _load(self, name: str, device_index: int):
        key = (name, device_index)
        with self._lock:
            return self._objects[key] if key in self._objects else self._load_new(key)

    def _load_new(self, key: tuple[str, int]):
        from cuda.core import Device, ObjectCode

        name, device_index = key
        Device(device_index).set_current()
        cap = gpu_info(device_index).capability
        module = self.compile(arch_for_capability(*cap))
        code = ObjectCode.from_cubin(module.cubin, name=self.label)
        self._objects[key] = code.get_kernel(name)
        return self._objects[key]


@dataclass
class Kernel:
    """One kernel of a :class:`KernelModule`, with typed parameters."""

    module: KernelModule
    name: str
    params: tuple[str, ...]

    def _pack(self, args: Sequence[object], device_index: int) -> list[object]:
        import torch

        if len(args) != len(self.params):
            raise InvalidArgumentError(
                f"kernel {self.name} takes {len(self.params)} arguments "
                f"({', '.join(self.params)}), got {len(args)}"
            )
        packed: list[object] = []
        for i, (kind, value) in enumerate(zip(self.params, args, strict=False)):
            if kind == "ptr":
                if isinstance(value, torch.Tensor):
                    if not value.is_cuda and not value.is_pinned():
                        raise InvalidArgumentError(
                            f"kernel {self.name} argument {i} must be a CUDA or pinned tensor, "
                            f"got device {value.device}"
                        )
                    if value.is_cuda and value.device.index != device_index:
                        raise InvalidArgumentError(
                            f"kernel {self.name} argument {i} is on {value.device} but the launch "
                            f"is on cuda:{device_index}"
                        )
                    packed.append(value.data_ptr())
                elif isinstance(value, int):
                    packed.append(value)
                else:
                    raise InvalidArgumentError(
                        f"kernel {self.name} argument {i} (pointer) must be a tensor or int, "
                        f"got {type(value).__name__}"
                    )
            else:
                if isinstance(value, (torch.Tensor, np.ndarray)) or not np.isscalar(value):
                    raise InvalidArgumentError(
                        f"kernel {self.name} argument {i} ({kind}) must be a scalar, "
                        f"got {type(value).__name__}"
                    )
                packed.append(SCALAR_TYPES[kind](value))
        return packed

    def _set_attributes(self, handle, device_index: int, smem: int, cluster: int) -> None:
        from cuda.bindings import driver

        attr = driver.CUfunction_attribute
        key = (self.name, device_index)
        with self.module._lock:
            # Raise the limit for any dynamic size not raised to yet, never lower it. Without the
            # attribute the driver allows 48 KB minus the kernel's *static* shared memory, not
            # 48 KB: a launch (or an occupancy query) with static + dynamic > 48 KB but dynamic
            # <= 48 KB fails (split_gemv_nt8: 32784 B static + 32768 B dynamic: occupancy 0).
            if smem > self.module._smem_raised.get(key, 0):
                (err,) = driver.cuKernelSetAttribute(
                    attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem,
                    handle,
                    driver.CUdevice(device_index),
                )
                if int(err) != 0:
                    raise UnsupportedDeviceError(
                        f"could not raise {self.name}'s dynamic shared memory to {smem} B: {err}"
                    )
                self.module._smem_raised[key] = smem
            if cluster > PORTABLE_CLUSTER_MAX and key not in self.module._nonportable:
                (err,) = driver.cuKernelSetAttribute(
                    attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                    handle,
                    driver.CUdevice(device_index),
                )
                if int(err) != 0:
                    raise UnsupportedDeviceError(
                        f"the GPU refused non-portable cluster size {cluster} for {self.name}: {err}"
                    )
                self.module._nonportable.add(key)

    def launch(
        self,
        grid: int | tuple[int, int, int],
        block: int | tuple[int, int, int],
        *args: object,
        cluster: int = 1,
        smem: int = 0,
        stream: torch.cuda.Stream | None = None,
        device: int | None = None,
    ) -> None:
        """Launch on ``stream`` (default: torch's current stream).

        ``grid`` counts CTAs (not clusters); with ``cluster`` = P > 1 its x extent must be a
        multiple of P. ``smem`` is the dynamic shared memory per CTA in bytes. ``device``
        (default: torch's current device) must be where the tensor arguments live.
        """
        import torch
        from cuda.core import LaunchConfig
        from cuda.core import launch as cuda_launch

        device_index = require_gpu() if device is None else device
        grid3 = (grid, 1, 1) if isinstance(grid, int) else tuple(grid)
        if min(grid3) < 1:
            raise InvalidArgumentError(f"{self.name}: grid {grid3} must be positive")
        require_cluster_support(cluster, device_index)
        if cluster > 1 and grid3[0] % cluster:
            raise InvalidArgumentError(
                f"{self.name}: grid x extent {grid3[0]} is not a multiple of cluster size {cluster}"
            )
        limit = gpu_info(device_index).smem_per_block_optin
        if smem > limit:
            raise UnsupportedDeviceError(
                f"{self.name} asks for {smem} B of dynamic shared memory per CTA; GPU "
                f"{device_index} allows at most {limit} B (minus any static shared memory)"
            )
        packed = self._pack(args, device_index)
        handle = self.module._load(self.name, device_index)
        self._set_attributes(handle.handle, device_index, smem, cluster)
        if cluster > 1:
            config = LaunchConfig(
                grid=(grid3[0] // cluster, grid3[1], grid3[2]),
                cluster=(cluster, 1, 1),
                block=block,
                shmem_size=smem,
            )
        else:
            config = LaunchConfig(grid=grid3, block=block, shmem_size=smem)
        torch_stream = stream if stream is not None else torch.cuda.current_stream(device_index)
        with torch.cuda.device(device_index):
            cuda_launch(_cuda_core_stream(torch_stream), config, handle, *packed)

    def max_active_clusters(self, cluster: int, block: int, smem: int, device: int | None = None) -> int:
        """How many clusters of ``cluster`` CTAs can be resident at once on ``device`` (default:
        the current one; driver occupancy)."""
        from cuda.core import Device, LaunchConfig

        device_index = require_gpu() if device is None else device
        require_cluster_support(cluster, device_index)
        handle = self.module._load(self.name, device_index)
        self._set_attributes(handle.handle, device_index, smem, cluster)
        config = LaunchConfig(grid=(1, 1, 1), cluster=(cluster, 1, 1), block=block,  # one cluster
                              shmem_size=smem)
        return int(handle.occupancy.max_active_clusters(
            config, stream=Device(device_index).default_stream))

    def max_active_ctas(self, block: int, smem: int, device: int | None = None) -> int:
        """How many CTAs of ``block`` threads and ``smem`` bytes the whole GPU (``device``,
        default the current one) holds at once."""
        device_index = require_gpu() if device is None else device
        handle = self.module._load(self.name, device_index)
        self._set_attributes(handle.handle, device_index, smem, 1)
        per_sm = handle.occupancy.max_active_blocks_per_multiprocessor(block, smem)
        return int(per_sm) * gpu_info(device_index).sm_count
