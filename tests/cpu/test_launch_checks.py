"""Launch-layer checks that need no GPU."""

import pytest
import torch

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.tensors import check_tensor

SRC = 'extern "C" __global__ void k(float* x, int n) {}'


def test_unknown_parameter_kind_is_rejected():
    with pytest.raises(InvalidArgumentError, match="unknown parameter kinds"):
        KernelModule(SRC, "k").function("k", ("ptr", "int"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_launch_without_gpu_raises_clearly():
    kernel = KernelModule(SRC, "k").function("k", ("ptr", "i32"))
    with pytest.raises(UnsupportedDeviceError, match="no CUDA GPU is visible"):
        kernel.launch(1, 32, 0, 1)


def test_cpu_tensor_is_rejected_with_its_name():
    with pytest.raises(InvalidArgumentError, match="weights must be on a CUDA device"):
        check_tensor("weights", torch.zeros(4))
    with pytest.raises(InvalidArgumentError, match="weights must be a torch.Tensor"):
        check_tensor("weights", [1.0])


def test_dynamic_shared_memory_attribute_is_raised_below_48_kb(monkeypatch):
    """The driver's default dynamic limit is 48 KB minus the kernel's static shared memory, so the
    attribute must be raised for any dynamic size, not only above 48 KB (on the H200 split_gemv_nt8,
    32784 B static + 32768 B dynamic, got occupancy 0 when it was not: commit cb352a7)."""
    driver = pytest.importorskip("cuda.bindings.driver")
    from smemkit.runtime.launch import KernelModule

    calls = []

    def fake_set(attr, value, handle, dev):
        calls.append((attr, value))
        return (0,)

    monkeypatch.setattr(driver, "cuKernelSetAttribute", fake_set)
    module = KernelModule("", "test")
    kern = module.function("k", ("ptr",))
    kern._set_attributes(object(), 0, 0, 1)
    assert calls == []
    kern._set_attributes(object(), 0, 32768, 1)
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert calls == [(attr, 32768)]
    kern._set_attributes(object(), 0, 16384, 1)  # already allowed: no second call
    kern._set_attributes(object(), 0, 100000, 1)
    assert calls == [(attr, 32768), (attr, 100000)]
    # a second Kernel for the same function shares the loaded kernel: it must not lower it
    module.function("k", ("ptr",))._set_attributes(object(), 0, 8192, 1)
    assert calls == [(attr, 32768), (attr, 100000)]
