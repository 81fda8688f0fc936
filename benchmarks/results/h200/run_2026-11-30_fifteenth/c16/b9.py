"""Fifteenth session driver (experiment, not shipped): reread_t512 with a per-row fast path. Where
the row's slice is whole 16-byte vectors (N % 4 == 0), each element loop runs a copy with
unguarded loads (load_full_vector) and no per-vector ownership test; the general loop stays for
other rows. Triton's lars kernel (same 512 threads, 32 registers, 4 CTAs per SM: ptxas on its
PTX) issues its loads predicated, without branches. lars and pearson_bwd 4K, lars 8K; rotated
rounds, time_both_modes."""
import argparse, json, re, statistics

import torch

from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.codegen import Variant, generate, kernel_name, parameter_kinds
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare
from smemkit.reduction.reference import output_errors
from smemkit.reduction.triton_kernels import TRITON
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

LOOP = "#pragma unroll 1\n  for (int _i = threadIdx.x; _i < _s.nvec; _i += THREADS) {\n"


def fast_path(src):
    out, pos, n = [], 0, 0
    while True:
        i = src.find(LOOP, pos)
        if i < 0:
            break
        j = src.index("\n  }\n", i) + len("\n  }\n")
        loop = src[i:j]
        fast = re.sub(r"load_vector<(true|false)>\((p_\w+), _v, _s, (_l2_keep)\)", r"load_full_vector<\1>(\2, _v, \3)", loop)
        fast = fast.replace("owns_index(_i, _s)", "true")
        out.append(src[pos:i])
        out.append("  if (_s.nfull == _s.nvec) {  // experiment: whole vectors only\n" + fast
                   + "  } else {\n" + loop + "  }\n")
        pos, n = j, n + 1
    out.append(src[pos:])
    assert n >= 2, n
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 64
    res = []
    for name, N in (("lars", 4096), ("pearson_bwd", 4096), ("lars", 8192)):
        spec = BUILTIN[name]
        M = 4096
        T, S = example_inputs(name, M, N, device="cuda")
        want = reference(spec, T, S)
        comp = torch.compile(EAGER[name], dynamic=False)
        best = "regs_t256" if N == 4096 else "reread_l2_t512_rows"
        cands = {"compile": (lambda: comp(T, S), None), "triton": (lambda: TRITON[name](T, S), None),
                 best: (lambda: run(spec, T, S, variant=best), None),
                 "reread_t512": (lambda: run(spec, T, S, variant="reread_t512"), None)}
        v = Variant("reread", threads=512)
        for blocks in (3, 4):
            src = fast_path(generate(spec, v, min_blocks=blocks))
            kname = kernel_name(spec, v)
            kernel = KernelModule(src, kname).function(kname, parameter_kinds(spec))
            prep = prepare(spec, T, S)

            def call(kernel=kernel, prep=prep):
                kernel.launch(M, 512, *prep.args, smem=0, device=0)
                return prep.outputs
            cands[f"fast@{blocks}"] = (call, prep.outputs)
        checks = {}
        for c, (fn, outs) in cands.items():
            if outs is not None:
                for t in outs.values():
                    t.fill_(float("nan"))
            got = fn(); torch.cuda.synchronize()
            first = {k: t.clone() for k, t in got.items()}
            got2 = fn(); torch.cuda.synchronize()
            checks[c] = (output_errors(first, want)["rel_err"], all(torch.equal(first[k], got2[k]) for k in first))
            print(f"check {name}@{N} {c:20s} rel_err {checks[c][0]:.2e} bitwise {checks[c][1]}", flush=True)
        names = list(cands)
        times = {c: [] for c in names}
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for c in (order if r % 2 == 0 else order[::-1]):
                times[c].append(time_both_modes(cands[c][0], warmup=5, reps=30).best.median_ms)
        c0 = statistics.median(times["compile"])
        for c in names:
            med = statistics.median(times[c])
            rounds = [x / y for x, y in zip(times[c], times["compile"])]
            res.append({"workload": name, "N": N, "cand": c, "ms": med, "vs_compile": med / c0, "per_round": rounds,
                        "rel_err": checks[c][0], "bitwise": checks[c][1], "rounds": times[c]})
            print(f"{name:12s} {N:5d} {c:20s} {med*1e3:7.2f} us x{med/c0:.4f} rounds {' '.join(f'{q:.3f}' for q in rounds)}",
                  flush=True)
        del T, want; torch.cuda.empty_cache()
    json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
