"""Where the parts of an offloaded model are put: HBM, pinned host memory, split linears.

Offloading a model and loading one from a checkpoint decide *what* goes where (``hf_layout``);
a placement does the putting. :class:`GpuPlacement` is the real one: HBM parts on a CUDA device,
host parts in exact-size pinned allocations (``PinnedBuffer``), split linears as
``OffloadedLinear``. :class:`CpuPlacement` puts every part in ordinary CPU memory (the CPU
stand-ins of ``hf_modules``) so that tests without a GPU check which rows and sequences went to
which part, and that the model still computes the same thing; it can be given memory limits to
exercise the fit checks.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import available_host_bytes


class Placement(Protocol):
    """What ``offload_model`` and ``load_offloaded`` need from the memory they place into."""

    device: torch.device  # where the model computes (its HBM parts live here)

    def hbm_free_bytes(self) -> int | None:
        """Bytes free on ``device`` now (None: no limit to check)."""

    def pinned_free_bytes(self) -> int | None:
        """Host bytes that can be pinned now (None: no limit to check)."""

    def to_hbm(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` on ``device`` (a copy unless it is already there)."""

    def hbm_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised tensor on ``device``."""

    def pinned_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised CPU tensor in host memory the device can read."""

    def device_view(self, host: torch.Tensor) -> torch.Tensor:
        """A tensor on ``device`` aliasing ``host`` (a whole ``pinned_empty`` allocation): kernels
        read and write the host memory through it in place (CUDA-graph-safe host access)."""

    def split_linear(self, weight: torch.Tensor, bias: torch.Tensor | None, ratio: float) -> nn.Module:
        """A linear whose weight's last ``ratio`` of rows (rounded by ``host_rows_for_ratio``) sit
        in host memory; the module exposes ``split_weight`` (``hbm``, ``host``, ``host_rows``)."""

    def free(self) -> None:
        """Release the host memory this placement allocated (``pinned_empty``) now."""


class GpuPlacement:
    """HBM on one CUDA device, host parts pinned with ``PinnedBuffer``, linears as
    ``OffloadedLinear`` (through :class:`~.hf_modules.StridedOffloadedLinear`)."""

    def __init__(self, device: int | torch.device | str | None = None) -> None:
        from smemkit.runtime.device import require_gpu

        index = require_gpu()
        if isinstance(device, int):
            index = device
        elif device is not None:
            chosen = torch.device(device)
            if chosen.type != "cuda":
                raise InvalidArgumentError(f"GpuPlacement needs a CUDA device, got {device!r}")
            index = index if chosen.index is None else chosen.index
        self.device = torch.device("cuda", index)
        self._buffers: list = []

    def hbm_free_bytes(self) -> int | None:
        return int(torch.cuda.mem_get_info(self.device)[0])

    def pinned_free_bytes(self) -> int | None:
        return available_host_bytes()

    def to_hbm(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.device)

    def hbm_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device=self.device)

    def pinned_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        from smemkit.offload import PinnedBuffer

        nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        buffer = PinnedBuffer(nbytes, device=self.device.index)
        self._buffers.append(buffer)
        return buffer.tensor(dtype, tuple(shape))

    def device_view(self, host: torch.Tensor) -> torch.Tensor:
        if host.numel() == 0:
            return torch.empty(tuple(host.shape), dtype=host.dtype, device=self.device)
        nbytes = host.numel() * host.element_size()
        for buffer in self._buffers:
            if not buffer.freed and buffer.host_ptr == host.data_ptr() and buffer.nbytes == nbytes:
                return buffer.cuda_view(host.dtype, tuple(host.shape))
        raise InvalidArgumentError("device_view takes a whole tensor from this placement's pinned_empty")

    def split_linear(self, weight: torch.Tensor, bias: torch.Tensor | None, ratio: float) -> nn.Module:
        from smemkit.offload import SplitWeight
        from smemkit.offload.hf_modules import StridedOffloadedLinear

        split = SplitWeight(weight, ratio, device=self.device.index)
        if bias is not None:
            bias = bias.to(self.device, dtype=split.dtype, copy=True).contiguous()
        return StridedOffloadedLinear(split, bias)

    def free(self) -> None:
        for buffer in self._buffers:
            buffer.free()
        self._buffers.clear()


class CpuPlacement:
    """Every part in ordinary CPU memory, as copies (a test double for :class:`GpuPlacement`).

    ``hbm_bytes`` / ``pinned_bytes`` stand for the free HBM and pinnable host memory the fit
    checks compare against (None: unlimited)."""

    def __init__(self, *, hbm_bytes: int | None = None, pinned_bytes: int | None = None) -> None:
        for label, value in (("hbm_bytes", hbm_bytes), ("pinned_bytes", pinned_bytes)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise InvalidArgumentError(f"{label} must be None or an integer >= 0, got {value!r}")
        self.device = torch.device("cpu")
        self._hbm_bytes, self._pinned_bytes = hbm_bytes, pinned_bytes

    def hbm_free_bytes(self) -> int | None:
        return self._hbm_bytes

    def pinned_free_bytes(self) -> int | None:
        return self._pinned_bytes

    def to_hbm(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to("cpu", copy=True)

    def hbm_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype)

    def pinned_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype)

    def device_view(self, host: torch.Tensor) -> torch.Tensor:
        return host  # the "device" is the CPU: the host tensor is its own view

    def split_linear(self, weight: torch.Tensor, bias: torch.Tensor | None, ratio: float) -> nn.Module:
        from smemkit.offload import host_rows_for_ratio
        from smemkit.offload.hf_modules import CpuSplitLinear, CpuSplitWeight

        n_hbm = weight.shape[0] - host_rows_for_ratio(int(weight.shape[0]), ratio)
        with torch.no_grad():
            split = CpuSplitWeight(weight[:n_hbm].to("cpu", copy=True), weight[n_hbm:].to("cpu", copy=True))
            bias = None if bias is None else bias.to("cpu", dtype=weight.dtype, copy=True)
        return CpuSplitLinear(split, bias)

    def free(self) -> None:
        return None
