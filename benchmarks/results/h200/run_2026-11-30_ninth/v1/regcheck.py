"""Registers / spills of non-cluster variants under __launch_bounds__ min-blocks overrides."""
import sys
from dataclasses import replace
import smemkit.reduction.codegen as cg
from smemkit.reduction.workloads import BUILTIN
from smemkit.reduction.kernels import regs_variant
from smemkit.runtime.compiler import compile_module
from smemkit.reduction.codegen import Variant, generate, kernel_name

OVR = {}
orig = cg.Variant.min_blocks
cg.Variant.min_blocks = property(lambda self: OVR.get(self.label.split("_t")[0] if False else self.kind, orig.fget(self)))
for name in sys.argv[1].split(","):
    spec = BUILTIN[name]
    for v, mbs in [(Variant("staged"), (1, 4, 5, 6, 7, 8)), (regs_variant(4096, 256), (4, 5, 6)),
                   (Variant("reread_l2", threads=512), (2, 3, 4)), (Variant("reread"), (2, 4, 6, 8))]:
        row = []
        for mb in mbs:
            OVR.clear(); OVR[v.kind] = mb
            src = generate(spec, v)
            m = compile_module(src, kernel_name(spec, v), arch="sm_90a")
            u = m.resources[kernel_name(spec, v)] if hasattr(m, "resources") else None
            row.append(f"mb{mb}:{u.registers}r/{u.spill_store_bytes}s" if u else "?")
        print(f"{name:14s} {v.label:22s} " + " ".join(row), flush=True)
