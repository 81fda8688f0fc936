"""CREDIT reduction-reuse kernels: declarative specs, generated cluster/staged/re-read variants.

``smemkit.reduction.layernorm_bwd(x, dy, gamma)`` and the other built-ins run the variant the
selection rule picks; ``run(spec, tensors, scalars)`` runs any user-written spec.
"""

from smemkit.reduction.advise import explain
from smemkit.reduction.api import (
    choose_variant,
    lars,
    layernorm_bwd,
    legal_variants,
    pearson_bwd,
    quant_int8,
    run,
    softmax_bwd,
    wvar_bwd,
)
from smemkit.reduction.reference import reference
from smemkit.reduction.spec import Output, ReductionSpec, Stage, Stat
from smemkit.reduction.workloads import BUILTIN

__all__ = ["BUILTIN", "Output", "ReductionSpec", "Stage", "Stat", "choose_variant", "explain", "lars",
           "layernorm_bwd", "legal_variants", "pearson_bwd", "quant_int8", "reference", "run",
           "softmax_bwd", "wvar_bwd"]
