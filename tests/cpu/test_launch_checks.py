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
