"""Exact-size pinned host memory, and weights split between HBM and pinned host memory.

PyTorch's pinned allocator rounds each request up to a power of two (a 4.1 GB weight would pin
8 GB), so offloaded weights are allocated here with ``cuMemHostAlloc`` at their exact size,
mapped into the device address space (``CU_MEMHOSTALLOC_DEVICEMAP``) and usable from every
context (``PORTABLE``). Kernels read them through the pointer ``cuMemHostGetDevicePointer``
returns (on Hopper with unified addressing it equals the host pointer).

:class:`PinnedBuffer` owns one allocation: ``free()`` (or leaving a ``with`` block) releases it at
once, after synchronizing the device so no queued kernel still reads it; a finalizer releases it
when the buffer and every tensor viewing it are gone. A tensor view of a freed buffer must not be
used (the memory is returned to the system): keep the buffer alive as long as its views.

:class:`SplitWeight` holds an (N, K) bf16/fp16 weight split along the output rows, the dimension
the split kernel tiles: rows ``[0, n_hbm)`` in HBM, the last ``host_rows`` rows in pinned host
memory. The host part is allocated first, so a failure (``PinnedMemoryError``, naming the size)
comes before any device memory is taken or any weight is copied.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
import weakref
from dataclasses import dataclass

import torch

from smemkit.errors import InvalidArgumentError, SmemkitError, is_int
from smemkit.offload.split_rule import TILE_ROWS, host_rows_for_ratio

WEIGHT_DTYPES = (torch.bfloat16, torch.float16)
# How every offload kernel's source takes its dtype (GEMV_DTYPE, ATT_DTYPE, DG_DTYPE: 0 bf16,
# 1 fp16) and how its cache label names it.
DTYPE_CODE = {dt: code for code, dt in enumerate(WEIGHT_DTYPES)}
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}
K_MULTIPLE = 8  # 16-byte vector loads of 2-byte elements


class PinnedMemoryError(SmemkitError, MemoryError):
    """Pinned (page-locked, device-mapped) host memory could not be allocated."""


def _gib(nbytes: int) -> str:
    return f"{nbytes} bytes ({nbytes / 2**30:.3f} GiB)"


def available_host_bytes() -> int | None:
    """Host memory a new allocation can take: Linux's ``MemAvailable`` (free pages plus what the
    kernel can reclaim, such as the page cache a checkpoint read fills), else the free pages
    ``os.sysconf`` reports, else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_pinned_request(nbytes: int, what: str = "pinned host buffer") -> None:
    """Raise before touching any device or model if ``nbytes`` cannot possibly be pinned.

    Negative or non-integer sizes are an ``InvalidArgumentError``; more than the host's available
    memory is a ``PinnedMemoryError`` naming the size.
    """
    if not is_int(nbytes) or nbytes < 0:
        raise InvalidArgumentError(f"{what}: size must be an integer number of bytes >= 0, got {nbytes!r}")
    avail = available_host_bytes()
    if avail is not None and nbytes > avail:
        raise PinnedMemoryError(
            f"{what}: cannot pin {_gib(nbytes)} of host memory: only {_gib(avail)} is available "
            f"(MemAvailable). Offload less (a smaller ratio) or free host memory.")


def _device_index(device: int | torch.device | str | None) -> int:
    """The CUDA device index meant by ``device`` (None: the current one); needs a GPU."""
    from smemkit.runtime.device import require_gpu

    current = require_gpu()
    if device is None:
        return current
    index = device if isinstance(device, int) else torch.device(device).index
    return current if index is None else int(index)


class _CudaArray:
    """A ``__cuda_array_interface__`` over a raw device address; holds ``owner`` alive."""

    def __init__(self, ptr: int, shape: tuple[int, ...], typestr: str, owner: object) -> None:
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None}
        self.owner = owner


def _driver_call(name: str, *args):
    from cuda.bindings import driver

    result = getattr(driver, name)(*args)
    err = result[0] if isinstance(result, tuple) else result
    rest = result[1:] if isinstance(result, tuple) else ()
    return err, rest


def _set_current(device_index: int) -> None:
    from cuda.core import Device

    Device(device_index).set_current()


def _free_host(ptr: int, device_index: int) -> None:
    """Release a cuMemHostAlloc pointer (used by free() and by the finalizer)."""
    try:
        _set_current(device_index)
        _driver_call("cuMemFreeHost", ptr)
    except Exception:  # interpreter shutdown: the driver may already be gone
        pass


class _Finalizer:
    """Frees once; shared by the explicit free() and the GC finalizer."""

    def __init__(self, ptr: int, device_index: int) -> None:
        self.ptr = ptr
        self.device_index = device_index
        self.lock = threading.Lock()

    def __call__(self, synchronize: bool = False) -> bool:
        with self.lock:
            if self.ptr == 0:
                return False
            ptr, self.ptr = self.ptr, 0
        if synchronize:
            with contextlib.suppress(Exception):
                torch.cuda.synchronize(self.device_index)
        _free_host(ptr, self.device_index)
        return True


class PinnedBuffer:
    """``nbytes`` of page-locked host memory, mapped for the GPU, allocated at exactly that size.

    ``host_ptr`` is the CPU address, ``device_ptr`` the address kernels use. ``tensor(dtype,
    shape)`` views the memory as a CPU tensor (``is_pinned()`` is True, so ``.copy_`` to and from
    the GPU is asynchronous). A zero-byte buffer allocates nothing.
    """

    def __init__(self, nbytes: int, *, device: int | torch.device | None = None) -> None:
        check_pinned_request(nbytes)
        self.nbytes = nbytes
        self.host_ptr = 0
        self.device_ptr = 0
        self._array = None
        self._finalizer: _Finalizer | None = None
        if nbytes == 0:
            self.device_index = -1
            return
        self.device_index = _device_index(device)
        from cuda.bindings import driver

        torch.cuda.init()
        _set_current(self.device_index)
        flags = int(driver.CU_MEMHOSTALLOC_PORTABLE) | int(driver.CU_MEMHOSTALLOC_DEVICEMAP)
        err, rest = _driver_call("cuMemHostAlloc", nbytes, flags)
        if int(err) != 0:
            raise PinnedMemoryError(
                f"cuMemHostAlloc could not pin {_gib(nbytes)} of host memory ({err}); offload "
                f"less (a smaller ratio) or free host memory")
        self.host_ptr = int(rest[0])
        self._finalizer = _Finalizer(self.host_ptr, self.device_index)
        err, rest = _driver_call("cuMemHostGetDevicePointer", self.host_ptr, 0)
        if int(err) != 0:
            self._finalizer()
            raise PinnedMemoryError(
                f"pinned {_gib(nbytes)} but could not map it for GPU {self.device_index} "
                f"(cuMemHostGetDevicePointer: {err})")
        self.device_ptr = int(rest[0])
        array = (ctypes.c_uint8 * nbytes).from_address(self.host_ptr)
        # Views keep the ctypes array alive, and it keeps this buffer alive: the finalizer runs
        # only when no view is left. free() does not wait for that.
        array._owner = self  # type: ignore[attr-defined]
        self._array = array
        weakref.finalize(self, self._finalizer)

    @property
    def freed(self) -> bool:
        return self.nbytes > 0 and (self._finalizer is None or self._finalizer.ptr == 0)

    def tensor(self, dtype: torch.dtype = torch.uint8, shape: tuple[int, ...] | None = None) -> torch.Tensor:
        """A CPU tensor over this memory (uint8 bytes reinterpreted as ``dtype``, then ``shape``)."""
        if self.freed:
            raise InvalidArgumentError("this pinned buffer was freed; its memory cannot be viewed")
        size = torch.empty((), dtype=dtype).element_size()
        if self.nbytes % size:
            raise InvalidArgumentError(f"{self.nbytes} bytes is not a whole number of {dtype} elements")
        if self.nbytes == 0:
            flat = torch.empty(0, dtype=dtype)
        else:
            flat = torch.frombuffer(self._array, dtype=torch.uint8).view(dtype)
        if shape is None:
            return flat
        if math.prod(shape) != flat.numel():
            raise InvalidArgumentError(f"shape {tuple(shape)} does not hold {flat.numel()} {dtype} elements")
        return flat.view(*shape)

    def cuda_view(self, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
        """A CUDA tensor aliasing this host memory (through ``__cuda_array_interface__``), so any
        CUDA op (cuBLAS included) reads it in place over the host link: the UVA zero-copy access
        vLLM's CPU offload uses. Raises when torch refuses a host pointer as CUDA memory."""
        if self.freed:
            raise InvalidArgumentError("this pinned buffer was freed")
        size = torch.empty((), dtype=dtype).element_size()
        typestr = {1: "|u1", 2: "<i2", 4: "<i4", 8: "<i8"}[size]
        if math.prod(shape) * size != self.nbytes:
            raise InvalidArgumentError(f"shape {tuple(shape)} of {dtype} is not {self.nbytes} bytes")
        view = _CudaArray(self.device_ptr, tuple(shape), typestr, self)
        with torch.cuda.device(self.device_index):
            raw = torch.as_tensor(view, device=f"cuda:{self.device_index}")
        return raw.view(dtype) if raw.dtype != dtype else raw

    def free(self) -> None:
        """Release the memory now (after the device finishes queued work). Idempotent."""
        if self._finalizer is not None:
            self._finalizer(synchronize=True)
        self._array = None

    def __enter__(self) -> PinnedBuffer:
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"host 0x{self.host_ptr:x}, device 0x{self.device_ptr:x}"
        return f"PinnedBuffer({self.nbytes} bytes, {state})"


def dtype_name(dtype: torch.dtype) -> str:
    """``bfloat16`` for ``torch.bfloat16``: how error messages name a dtype."""
    return str(dtype).replace("torch.", "")


def check_half_tensor(name: str, t: object, ndim: int, layout: str) -> torch.Tensor:
    """A ``ndim``-D bf16/fp16 tensor (``layout`` names its dimensions in the error); anything
    else is a clear error naming ``name``."""
    if not isinstance(t, torch.Tensor):
        raise InvalidArgumentError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise InvalidArgumentError(f"{name} must be {ndim}-D ({layout}), got shape {tuple(t.shape)}")
    if t.dtype not in WEIGHT_DTYPES:
        raise InvalidArgumentError(f"{name} has dtype {dtype_name(t.dtype)}; allowed: bfloat16, float16")
    return t


def check_weight(weight: object, name: str = "weight") -> torch.Tensor:
    """A 2-D (N, K) bf16/fp16 tensor with K a multiple of 8; anything else is a clear error."""
    weight = check_half_tensor(name, weight, 2, "out_features, in_features")
    n, k = weight.shape
    if n < 1 or k < 1:
        raise InvalidArgumentError(f"{name} must not be empty, got shape {tuple(weight.shape)}")
    if k % K_MULTIPLE:
        raise InvalidArgumentError(
            f"{name}: in_features K = {k} must be a multiple of {K_MULTIPLE} (16-byte loads of "
            "2-byte elements); pad the weight and the input")
    return weight


@dataclass(frozen=True)
class SplitShape:
    """Where an (N, K) weight's rows live for a requested ratio (pure arithmetic, no memory)."""

    n_rows: int
    k: int
    host_rows: int
    requested_ratio: float

    @property
    def n_hbm(self) -> int:
        return self.n_rows - self.host_rows

    @property
    def ratio(self) -> float:
        return self.host_rows / self.n_rows

    @property
    def host_bytes(self) -> int:
        return self.host_rows * self.k * 2

    @classmethod
    def of(cls, n_rows: int, k: int, ratio: float, tile: int = TILE_ROWS) -> SplitShape:
        return cls(n_rows, k, host_rows_for_ratio(n_rows, ratio, tile), float(ratio))


class SplitWeight:
    """An (N, K) bf16/fp16 weight split by output rows: the first ``n_hbm`` rows in HBM (``.hbm``),
    the last ``host_rows`` rows in exact-size pinned host memory (``.host``, a CPU tensor;
    ``.host_ptr`` the address kernels read).

    ``ratio`` is the requested offload fraction; the realized one (``.ratio``) is
    ``host_rows / N`` with the HBM/host boundary on a ``tile``-row multiple
    (:func:`host_rows_for_ratio`). The weight may be on the CPU or the GPU; it is copied.
    Arguments are checked, and the pinned memory allocated, before anything else happens.
    """

    def __init__(self, weight: torch.Tensor, ratio: float, *, device: int | torch.device | None = None,
                 tile: int = TILE_ROWS) -> None:
        check_weight(weight)
        n, k = weight.shape
        self.split = SplitShape.of(int(n), int(k), ratio, tile)
        check_pinned_request(self.split.host_bytes, f"host part of a {n}x{k} weight at ratio {ratio}")
        index = _device_index(weight.device if device is None and weight.is_cuda else device)
        self.device = torch.device("cuda", index)
        self.dtype = weight.dtype
        # host memory first: failing here leaves the device and the model untouched
        self._buffer = PinnedBuffer(self.split.host_bytes, device=index)
        self.host = self._buffer.tensor(weight.dtype, (self.split.host_rows, int(k)))
        n_hbm = self.split.n_hbm
        with torch.no_grad():
            self.hbm = weight[:n_hbm].to(self.device, copy=True).contiguous()
            if self.split.host_rows:
                self.host.copy_(weight[n_hbm:])
        if weight.is_cuda:
            torch.cuda.synchronize(weight.device)

    # ---- shape --------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.split.n_rows, self.split.k)

    @property
    def n_hbm(self) -> int:
        return self.split.n_hbm

    @property
    def host_rows(self) -> int:
        return self.split.host_rows

    @property
    def ratio(self) -> float:
        """The realized offload ratio: host rows / all rows."""
        return self.split.ratio

    @property
    def requested_ratio(self) -> float:
        return self.split.requested_ratio

    @property
    def host_ptr(self) -> int:
        """Device-usable address of the host rows (0 when there are none)."""
        if self._buffer.freed:
            raise InvalidArgumentError("this SplitWeight was freed")
        return self._buffer.device_ptr

    @property
    def nbytes(self) -> int:
        return self.split.n_rows * self.split.k * self.hbm.element_size()

    # ---- conversions --------------------------------------------------------------------------
    def host_cuda_view(self) -> torch.Tensor:
        """The host rows as a CUDA tensor aliasing the pinned memory (UVA zero-copy reads)."""
        if self.host_rows == 0:
            return torch.empty((0, self.split.k), dtype=self.dtype, device=self.device)
        return self._buffer.cuda_view(self.dtype, (self.host_rows, self.split.k))

    def to_dense(self) -> torch.Tensor:
        """The whole weight as one CUDA tensor (a copy)."""
        full = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        full[: self.n_hbm].copy_(self.hbm)
        if self.host_rows:
            full[self.n_hbm:].copy_(self.host)
        return full

    # ---- lifetime -----------------------------------------------------------------------------
    @property
    def freed(self) -> bool:
        return self._buffer.freed

    def free(self) -> None:
        """Release the pinned rows now (and drop the HBM rows). Idempotent."""
        self._buffer.free()
        self.host = torch.empty((0, self.split.k), dtype=self.dtype)
        self.hbm = torch.empty((0, self.split.k), dtype=self.dtype, device=self.device)

    def __enter__(self) -> SplitWeight:
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        n, k = self.shape
        return (f"SplitWeight({n}x{k} {str(self.dtype).replace('torch.', '')}, ratio {self.ratio:.4f} "
                f"(asked {self.requested_ratio:g}): {self.n_hbm} rows in HBM, {self.host_rows} pinned)")
