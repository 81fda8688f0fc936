"""CREDIT reduction-reuse kernels: declarative specs, generated cluster/staged/re-read variants.

``smemkit.reduction.layernorm_bwd(x, dy, gamma)`` and the other built-ins run the variant the
selection rule picks; ``run(spec, tensors, scalars)`` runs any user-written spec.
"""

import importlib

from smemkit.reduction.advise import explain
from smemkit.reduction.reference import reference
from smemkit.reduction.spec import Output, ReductionSpec, Stage, Stat
from smemkit.reduction.workloads import BUILTIN

__all__ = ["BUILTIN", "Output", "ReductionSpec", "Stage", "Stat", "choose_variant", "explain", "lars",
           "layernorm_bwd", "legal_variants", "pearson_bwd", "quant_int8", "reference", "run",
           "softmax_bwd", "wvar_bwd"]

# name -> submodule, imported on first access (PEP 562): these need torch (the GPU extra), the
# cost model behind ``explain`` does not.
_LAZY = {
    **dict.fromkeys(("choose_variant", "lars", "layernorm_bwd", "legal_variants", "pearson_bwd",
                     "quant_int8", "run", "softmax_bwd", "wvar_bwd"), "api"),
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"smemkit.reduction.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'smemkit.reduction' has no attribute {name!r}")
