"""Ninth session: non-cluster kernels at 4K / 8K under __launch_bounds__ min-blocks overrides
(more CTAs per SM through a register cap), against torch.compile (default) in the same process.
Two rounds in opposite orders; every output checked against float64."""
import json, sys, time
import torch
import smemkit.reduction.codegen as cg
import smemkit.reduction.kernels as K
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.compiler import compile_module
from smemkit.runtime.timing import time_both_modes

OVR: dict = {}
_orig = cg.Variant.min_blocks
cg.Variant.min_blocks = property(lambda self: OVR.get((self.kind, self.threads), _orig.fget(self)))
torch._dynamo.config.cache_size_limit = 64

def variants(N):
    rv = K.regs_variant
    if N == 4096:
        return [(Variant("staged"), (1, 5, 6)), (rv(N, 256), (4, 5)),
                (Variant("reread"), (2, 4, 6, 8)), (Variant("reread", threads=512), (2, 3, 4)),
                (Variant("reread_l2", threads=512, per_row=True), (2,))]
    return [(Variant("staged"), (1, 5, 6)), (rv(N, 512), (2, 3)), (Variant("reread"), (2, 4, 6, 8)),
            (Variant("reread", threads=512), (2, 3, 4)),
            (Variant("reread_l2", threads=512, per_row=True), (2,)), (Variant("reread_l2", per_row=True), (1,))]

def main():
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else sorted(BUILTIN)
    widths = (4096, 8192)
    out = sys.argv[1]
    recs = []
    for name in names:
        spec = BUILTIN[name]
        M = 2048 if name == "layernorm_bwd" else 4096
        comp = torch.compile(EAGER[name], dynamic=False)
        for N in widths:
            tensors, scalars = example_inputs(name, M, N, device="cuda")
            want = reference(spec, tensors, scalars)
            byts = spec.bytes.compulsory * M * N
            cands = [("compile", None, None)]
            for v, mbs in variants(N):
                for mb in mbs:
                    cands.append((f"{v.label}_mb{mb}", v, mb))
            for rnd, order in enumerate((cands, cands[::-1])):
                for label, v, mb in order:
                    if v is None:
                        fn = lambda: comp(tensors, scalars)
                        regs = spill = None
                    else:
                        OVR.clear(); OVR[(v.kind, v.threads)] = mb
                        K.compiled_kernel.cache_clear(); K._RESIDENT.clear()
                        mod = compile_module(generate(spec, v), kernel_name(spec, v))
                        ru = mod.resources[kernel_name(spec, v)]
                        regs, spill = ru.registers, ru.spill_store_bytes
                        prep = K.prepare(spec, tensors, scalars, None)
                        fn = lambda p=prep, v=v: (K.launch(spec, v, p), p.outputs)[1]
                    try:
                        got = fn(); torch.cuda.synchronize()
                    except Exception as e:
                        recs.append({"workload": name, "N": N, "label": label, "round": rnd, "error": str(e)[:200]})
                        continue
                    err = max(relative_error(got[k], w) for k, w in want.items() if got[k].dtype != torch.int8)
                    t = time_both_modes(fn, warmup=5, reps=30).best.median_ms
                    ctas = None
                    if v is not None:
                        ctas = K.ctas_per_sm_at_once(spec, v, M, N, 0)
                    recs.append({"workload": name, "M": M, "N": N, "label": label, "round": rnd, "ms": t,
                                 "tbps": byts / t / 1e9, "rel_err": err, "regs": regs, "spill_b": spill,
                                 "ctas_per_sm": ctas})
            json.dump(recs, open(out, "w"), indent=1)
            # table for this shape: median over rounds
            by = {}
            for r in recs:
                if r["workload"] == name and r["N"] == N and "ms" in r:
                    by.setdefault(r["label"], []).append(r["ms"])
            c = min(by["compile"])
            print(f"{name} N={N}: compile {c*1e3:.1f} us", flush=True)
            for lab, ts in sorted(by.items(), key=lambda kv: min(kv[1])):
                r0 = next(r for r in recs if r["workload"] == name and r["N"] == N and r["label"] == lab)
                print(f"   {lab:28s} {min(ts)*1e3:7.1f} {max(ts)*1e3:7.1f} us  vs compile {c/min(ts):.3f}  "
                      f"regs {r0['regs']} spill {r0['spill_b']} ctas/SM {r0['ctas_per_sm']}", flush=True)
main()
