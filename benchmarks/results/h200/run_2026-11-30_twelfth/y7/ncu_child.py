"""Twelfth session (experiment driver, not shipped): one launch each of the 8K kernels where the
faster regs kernels beat the cluster kernels (layernorm_bwd, softmax_bwd), and of wvar_bwd 16K
where the cluster wins against a staged kernel, for Nsight Compute (what limits both near 3.4 TB/s)."""
import torch
from smemkit.reduction import BUILTIN
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import prepare, launch_args, regs_variant
from smemkit.reduction.workloads import example_inputs

for name, N, M, vs in (("layernorm_bwd", 8192, 2048, [regs_variant(8192, 512), Variant("cluster", 2)]),
                       ("softmax_bwd", 8192, 4096, [regs_variant(8192, 512), Variant("cluster", 2)]),
                       ("wvar_bwd", 16384, 4096, [Variant("staged"), Variant("cluster", 2)])):
    spec = BUILTIN[name]
    t, s = example_inputs(name, M, N, device="cuda")
    prep = prepare(spec, t, s)
    for v in vs:
        for _ in range(3):
            launch_args(spec, v, M, N, prep.args)
        torch.cuda.synchronize()
