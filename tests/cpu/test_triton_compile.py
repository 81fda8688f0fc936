"""smemkit's Triton kernels compile for sm_90 without a GPU (triton.compile for a GPUTarget), on both
paths (row in one BLOCK or looped). Run in a subprocess: test_triton_kernels.py turns this pytest
process's Triton into its CPU interpreter, which has no compiler."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

# Not importorskip: importing triton here, before test_triton_kernels.py sets TRITON_INTERPRET,
# would leave that module's kernels compiled instead of interpreted.
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

SCRIPT = r'''
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import smemkit.reduction.triton_kernels as tk

SCALARS = {"N": "i32", "eps": "fp32", "lr": "fp32", "momentum": "fp32", "weight_decay": "fp32",
           "eta": "fp32"}
CONSTEXPRS = ("BLOCK", "ONE", "USE_RINT")
for name in ("layernorm_bwd", "wvar_bwd", "pearson_bwd", "softmax_bwd", "lars", "quant_int8"):
    fn = getattr(tk, f"_{name}_kernel")
    sig = {a: "constexpr" if a in CONSTEXPRS else SCALARS.get(a, "*i8" if a == "Q" else "*fp32")
           for a in fn.arg_names}
    for one in (True, False):
        values = {"BLOCK": 1024, "ONE": one, "USE_RINT": True}
        consts = {(fn.arg_names.index(a),): values[a] for a in fn.arg_names if a in CONSTEXPRS}
        compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts),
                                  target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        assert ".entry _" + name + "_kernel" in compiled.asm["ptx"], name
        print(name, one, "ok")
'''


def test_every_triton_kernel_compiles_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(" ok") == 12, proc.stdout
