"""Tensor maps (the 128-byte descriptors TMA copies read) for row-major 16-bit matrices, made with
the driver's ``cuTensorMapEncodeTiled`` (cuda.bindings), and their copies in device memory.

One way to make them for every kernel that takes one: the host-read probe (``offload/host_paths``)
and the direct-access GEMM (``offload/direct_gemm``)."""

from __future__ import annotations

import ctypes

import torch

from smemkit.errors import UnsupportedDeviceError

TENSOR_MAP_BYTES = 128


def encode_2d(ptr: int, rows: int, cols: int, box_rows: int, box_cols: int, dtype: torch.dtype, *,
              promote_l2: bool = False) -> bytes:
    """The tensor map of a row-major ``rows x cols`` bf16/fp16 matrix at device address ``ptr``
    (pinned host memory through its mapped address works too), read in boxes of ``box_rows x
    box_cols``: 128-byte swizzle when a box row is 128 bytes (64 columns), none otherwise; zero
    fill out of bounds; L2 promotion of 128 B when ``promote_l2``."""
    from cuda.bindings import driver

    dt = (driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 if dtype == torch.bfloat16
          else driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
    swizzle = (driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B if box_cols * 2 == 128
               else driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE)
    promotion = (driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B if promote_l2
                 else driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE)
    err, tmap = driver.cuTensorMapEncodeTiled(
        dt, 2, ptr, [driver.cuuint64_t(cols), driver.cuuint64_t(rows)], [driver.cuuint64_t(cols * 2)],
        [driver.cuuint32_t(box_cols), driver.cuuint32_t(box_rows)],
        [driver.cuuint32_t(1), driver.cuuint32_t(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise UnsupportedDeviceError(f"cuTensorMapEncodeTiled refused a {rows} x {cols} matrix at 0x{ptr:x} "
                                     f"(box {box_rows} x {box_cols}): {err}")
    return ctypes.string_at(tmap.getPtr(), TENSOR_MAP_BYTES)


def to_device(raw: bytes, device: torch.device | str) -> torch.Tensor:
    """Tensor maps (concatenated) copied to device memory, where kernels read them (64-byte
    aligned, as TMA requires)."""
    dev = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(device)
    if dev.data_ptr() % 64:
        raise UnsupportedDeviceError("the tensor maps' device copy is not 64-byte aligned")
    return dev
