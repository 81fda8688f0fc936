"""At 4K: how the L2 state before each repetition (dirty fill, clean read, none) moves our
non-cluster kernels against Triton and torch.compile; plus ours with plain stores (not .cs)."""
import json, sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path("benchmarks").resolve()))
from smemkit.reduction import BUILTIN, reference, kernels
from smemkit.reduction.codegen import Variant, generate as gen0
from smemkit.reduction.eager import EAGER
from smemkit.reduction.kernels import prepare, launch_args, regs_variant
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from triton_baselines import TRITON

out = sys.argv[1]
OPT = {"plain": False}


def gen(spec, v):
    src = gen0(spec, v)
    return src.replace("__stcs(", "__stwb(") if OPT["plain"] else src


kernels.generate = gen
l2 = torch.cuda.get_device_properties(0).L2_cache_size
scratch = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
acc = torch.empty((), dtype=torch.int64, device="cuda")
FLUSH = {"fill": lambda: scratch.fill_(1), "read": lambda: torch.sum(scratch.view(torch.int64), dim=0, out=acc),
         "none": lambda: None}


def timed(fn, flush, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(st, en):
        FLUSH[flush]()
        s.record(); g.replay(); e.record()
    torch.cuda.synchronize()
    ts = sorted(s.elapsed_time(e) for s, e in zip(st, en))
    return ts[len(ts) // 2]


recs = []
for name in ("softmax_bwd", "layernorm_bwd", "pearson_bwd", "lars", "wvar_bwd", "quant_int8"):
    spec = BUILTIN[name]
    M, N = (2048 if name == "layernorm_bwd" else 4096), 4096
    t, s = example_inputs(name, M, N, device="cuda")
    want = reference(spec, t, s)
    comp = spec.bytes.compulsory * M * N
    fns = {}
    for v in (Variant("staged"), regs_variant(N, 256)):
        for plain in (False, True):
            OPT["plain"] = plain
            kernels.compiled_kernel.cache_clear()
            prep = prepare(spec, t, s)
            launch_args(spec, v, M, N, prep.args); torch.cuda.synchronize()
            err = max((relative_error(prep.outputs[k], w) for k, w in want.items()
                       if prep.outputs[k].dtype != torch.int8), default=0.0)
            assert err < 1e-5, (v, err)
            fns[v.label + ("_plainst" if plain else "")] = (lambda v=v, prep=prep: launch_args(spec, v, M, N, prep.args))
    OPT["plain"] = False
    tf = TRITON[name]; tf(t, s); torch.cuda.synchronize()
    fns["triton"] = lambda: tf(t, s)
    f = torch.compile(EAGER[name], dynamic=False); f(t, s); torch.cuda.synchronize()
    fns["compile"] = lambda: f(t, s)
    line = f"{name:14s}"
    for flush in ("fill", "read", "none"):
        for label, fn in fns.items():
            ms = timed(fn, flush)
            recs.append({"workload": name, "M": M, "N": N, "label": label, "flush": flush, "ms": ms,
                         "eff_tbps": comp / (ms * 1e-3) / 1e12})
        line += f" | {flush}: " + " ".join(f"{r['label']}={r['eff_tbps']:.2f}" for r in recs[-len(fns):])
    try:
        best = tf.__self__ if hasattr(tf, "__self__") else None
    except Exception:
        best = None
    print(line, flush=True)
json.dump(recs, open(out, "w"), indent=1)
