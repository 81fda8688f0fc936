"""Fifteenth session driver (experiment, not shipped): issue 3's last two points, lars 4K / 8K
against torch.compile. Candidates: the shipped best non-cluster kernels, and experimental edits of
the generated regs / reread_l2_rows sources: (pf) thread 0 bulk-prefetches into L2 the rows of w, g,
v that the CTA D rows later will read (D a fraction of the CTAs resident at once), and (t128) the
regs kernel at 128 threads holding 8 vectors per input. Every candidate is checked against float64
(NaN-poisoned outputs) and for bitwise repeatability, then timed as benchmarks/reduction.py times
(time_both_modes, L2 flushed), in rotated order over several rounds, the SM clock recorded."""
import argparse, json, statistics, sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from offload_ops import sm_clock_mhz  # noqa: E402
from smemkit.reduction import BUILTIN, reference, run  # noqa: E402
from smemkit.reduction.codegen import Variant, dynamic_smem_bytes, generate, kernel_name, parameter_kinds  # noqa: E402
from smemkit.reduction.eager import EAGER  # noqa: E402
from smemkit.reduction.kernels import prepare  # noqa: E402
from smemkit.reduction.reference import output_errors  # noqa: E402
from smemkit.reduction.workloads import example_inputs  # noqa: E402
from smemkit.runtime.launch import KernelModule  # noqa: E402
from smemkit.runtime.timing import time_both_modes  # noqa: E402

SPEC = BUILTIN["lars"]
ANCHOR = "  const Slice _s = make_slice(_row, N, _rank, P);\n"
PF = ("  if (threadIdx.x == 0 && _row + PF_D < M) {  // experiment: warm the L2 for a later row\n"
      "    const long long _o = static_cast<long long>(_row + PF_D) * N;\n"
      "    prefetch_bulk_l2(p_w + _o, 4u * N);\n    prefetch_bulk_l2(p_g + _o, 4u * N);\n"
      "    prefetch_bulk_l2(p_v + _o, 4u * N);\n  }\n")


def source(variant, threads=None, vregs=None, pf=None):
    src = generate(SPEC, variant)
    if threads:
        src = src.replace(f"#define THREADS {variant.threads}\n", f"#define THREADS {threads}\n", 1)
    if vregs:
        src = src.replace(f"#define VREGS {variant.vregs} ", f"#define VREGS {vregs} ", 1)
    if pf is not None:
        assert ANCHOR in src, "anchor line missing"
        src = src.replace(ANCHOR, ANCHOR + PF, 1).replace("#define P 1\n", f"#define P 1\n#define PF_D {pf}\n", 1)
    return src


def custom(variant, M, N, tensors, scalars, threads=None, vregs=None, pf=None):
    name = kernel_name(SPEC, variant)
    kernel = KernelModule(source(variant, threads, vregs, pf), name).function(name, parameter_kinds(SPEC))
    prepared = prepare(SPEC, tensors, scalars)
    smem = dynamic_smem_bytes(SPEC, variant, N)
    T = threads or variant.threads
    resident = kernel.max_active_ctas(T, smem, 0)

    def call():
        kernel.launch(M, T, *prepared.args, smem=smem, device=0)
        return prepared.outputs
    return call, prepared.outputs, resident


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 64
    compiled = torch.compile(EAGER["lars"], dynamic=False)
    result = {"records": [], "resident": {}}
    for N in (4096, 8192):
        M = 4096
        tensors, scalars = example_inputs("lars", M, N, device="cuda")
        want = reference(SPEC, tensors, scalars)
        cands = {"compile": (lambda: compiled(tensors, scalars), None)}
        ship = ["regs_t256", "regs_t512", "reread_t512"] if N == 4096 else ["regs_t512", "reread_l2_t512_rows", "reread_t512"]
        for s in ship:
            cands[s] = (lambda s=s: run(SPEC, tensors, scalars, variant=s), None)
        if N == 4096:
            base = [("regs_v4_t256", Variant("regs", threads=256, vregs=4), {}),
                    ("regs_v8_t128", Variant("regs", threads=256, vregs=4), {"threads": 128, "vregs": 8})]
        else:
            base = [("regs_v4_t512", Variant("regs", threads=512, vregs=4), {}),
                    ("reread_l2_t512_rows", Variant("reread_l2", threads=512, per_row=True), {})]
        for label, v, kw in base:
            if "threads" in kw:
                call, outs, R = custom(v, M, N, tensors, scalars, **kw)
                cands[label] = (call, outs)
            _, _, R = custom(v, M, N, tensors, scalars, pf=0, **kw)
            result["resident"][f"{label}@{N}"] = R
            for frac in (4, 2, 1):
                D = max(1, R // frac)
                call, outs = custom(v, M, N, tensors, scalars, pf=D, **kw)[:2]
                cands[f"{label}_pf{D}"] = (call, outs)
        checks = {}
        for c, (fn, outs) in cands.items():
            if outs is not None:
                for t in outs.values():
                    t.fill_(float("nan"))
            got = fn(); torch.cuda.synchronize()
            first = {k: t.clone() for k, t in got.items()}
            got2 = fn(); torch.cuda.synchronize()
            same = all(torch.equal(first[k], got2[k]) for k in first)
            err = output_errors(first, want)["rel_err"]
            checks[c] = (err, same)
            print(f"check N={N} {c:28s} rel_err {err:.2e} bitwise {same}", flush=True)
        names = list(cands)
        times = {c: [] for c in names}
        for rnd in range(a.rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            if rnd % 2:
                order = order[::-1]
            for c in order:
                b = time_both_modes(cands[c][0], warmup=5, reps=30)
                times[c].append((b.best.median_ms, b.mode, sm_clock_mhz()))
        comp = statistics.median(t[0] for t in times["compile"])
        for c in names:
            med = statistics.median(t[0] for t in times[c])
            per_round = [t[0] / tc[0] for t, tc in zip(times[c], times["compile"])]
            result["records"].append({"N": N, "M": M, "cand": c, "ms": med, "vs_compile": med / comp,
                                      "rel_err": checks[c][0], "bitwise": checks[c][1],
                                      "per_round_vs_compile": per_round, "rounds": times[c]})
        del tensors, want; torch.cuda.empty_cache()
    json.dump(result, open(a.out, "w"), indent=1)
    print("resident", result["resident"])
    for r in result["records"]:
        print(f"N={r['N']:5d} {r['cand']:28s} {r['ms']*1e3:7.2f} us  x{r['vs_compile']:.4f} "
              f"rounds {' '.join(f'{q:.3f}' for q in r['per_round_vs_compile'])} err {r['rel_err']:.1e} {r['bitwise']}")


if __name__ == "__main__":
    main()
