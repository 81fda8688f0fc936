"""Worked example of issue 7 item 4: a cp.async double-buffered tile loop, analysed by smemkit.tiling
before and after the advisor's change, then timed and profiled on the GPU.

    python3 benchmarks/tiling_worked_example.py --ncu   # H200, writes results/h200/tiling_worked_example.json
    python3 benchmarks/tiling_worked_example.py --dry-run --out /tmp/twe.json   # no GPU needed

The kernel (benchmarks/kernels/tiling_worked_example.cu) is an fp32 GEMM tile loop C = A·B on CUDA
cores: CTA tile 64 x 32, BK = 32, block (32, 4), two shared-memory stages filled by 16-byte
``cp.async.cg.shared.global`` (commit/wait groups). Its A tile As[2][64][32] is the built-in
``cp_async_double_buffer`` pattern: rows filled along K, read by a thread-per-row float4 down M,
an 8-way bank conflict. The script

1. describes the kernel's shared-memory accesses as a ``smemkit.tiling.Pattern`` (both stages, i.e.
   two consecutive k-tiles of one CTA), runs ``advise`` on the unpadded layout and checks that it
   recommends padding of 4 floats and ``Swizzle(3,2,3)``: those become the "padded" and "swizzled"
   variants, compiled with the advisor's numbers as defines;
2. predicts per launch: wavefronts (and warp instructions) per CTA per k-tile x CTAs x k-tiles;
3. on a GPU, checks each variant against an fp64 torch reference, times it (``time_gpu``, median of
   ``--reps`` after ``--warmup``), and with ``--ncu`` profiles a driver process (this script with
   ``--driver``) that launches each variant once, under ONE Nsight Compute run:

       ncu --clock-control none --target-processes all --kernel-name regex:^smk_twe_
           --metrics <METRICS> --csv --page raw --print-units base --log-file <tmp>
           python3 benchmarks/tiling_worked_example.py --driver --driver-spec <spec> --driver-out <tmp>

Optional metrics (the cp.async/LDGSTS counters among them) are first checked against
``ncu --query-metrics``; if the run still yields nothing it is repeated with the required four.

``--dry-run`` compiles, predicts, checks the kernel's offset functions against the analyzer with a
host C++ compiler (when one exists) and writes the same JSON with the measured fields null.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    import smemkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(HERE.parent / "src"))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from tiling_validate import find_ncu, host_compiler, profile_attempts  # noqa: E402

from smemkit.errors import ToolNotFoundError  # noqa: E402
from smemkit.runtime.compiler import CompiledModule, compile_module, dump_sass  # noqa: E402
from smemkit.tiling import Access, Pattern, SmemLayout, Swizzle, advise, analyze  # noqa: E402
from smemkit.tiling.examples import cp_async_double_buffer  # noqa: E402
from smemkit.tiling.occupancy import occupancy  # noqa: E402

KERNEL_PATH = HERE / "kernels" / "tiling_worked_example.cu"
DEFAULT_OUT = HERE / "results" / "h200" / "tiling_worked_example.json"
KERNEL_PREFIX = "smk_twe_"

BM, BN, BK, TN = 64, 32, 32, 16  # must match SMK_TWE_* in the .cu
BLOCK = (32, 4, 1)
STAGES = (0, 1)
VARIANTS = ("unpadded", "padded", "swizzled")
# What the advisor recommends for this kernel (docs/tiling.md; the script stops if it changes).
EXPECTED_PAD = 4
EXPECTED_SWIZZLE = Swizzle(3, 2, 3)
# Static SASS of one k-tile of the main loop: 8 A + 128 B float4 reads, 4 + 2 cp.async per thread.
SASS_LDS128 = BK // 4 * (1 + 4 * TN // 4)
SASS_LDGSTS = 2 * 6  # prologue + loop body
REL_TOL = 1e-4

# (record key, metric); the first four are required, the others are kept where ncu knows them.
METRICS = (
    ("wavefronts_load", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("wavefronts_store", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    ("instructions_load", "smsp__inst_executed_op_shared_ld.sum"),
    ("instructions_store", "smsp__inst_executed_op_shared_st.sum"),
    ("instructions_ldgsts_sass", "smsp__sass_inst_executed_op_ldgsts.sum"),
    ("instructions_ldgsts", "smsp__inst_executed_op_ldgsts.sum"),
    ("wavefronts_ldgsts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"),
    ("wavefronts_ldgsts_sass", "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"),
    ("wavefronts_shared_all", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
    ("bank_conflicts_load", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("bank_conflicts_store", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ("duration_ns", "gpu__time_duration.sum"),
)
REQUIRED_METRICS = 4


class WorkedExampleError(RuntimeError):
    """The analysis or the advisor no longer says what this example is built on."""


def require(cond: bool, message: str) -> None:
    if not cond:
        raise WorkedExampleError(message)


# --------------------------------------------------------------------------------------------
# The kernel as a pattern


def round128(nbytes: int) -> int:
    return -(-nbytes // 128) * 128


def as_layout(pad: int = 0, transform: Swizzle | None = None) -> SmemLayout:
    return SmemLayout((2, BM, BK), "fp32", pad=pad, transform=transform)


def bs_layout(a: SmemLayout) -> SmemLayout:
    """Bs[2][BK][BN] right after As, 128-byte aligned (SMK_TWE_BS_BASE in the .cu)."""
    return SmemLayout((2, BK, BN), "fp32", base=round128(a.nbytes))


def kernel_pattern(a: SmemLayout | None = None, regs: int = 64) -> Pattern:
    """Every shared-memory access of one CTA over two consecutive k-tiles (stage s = 0, 1)."""
    a = a if a is not None else as_layout()
    s = {"s": STAGES}
    return Pattern(
        "tiling_worked_example", BLOCK, {"As": a, "Bs": bs_layout(a)},
        (Access("As", "s, tid // 8 + 16*i, 4*(tid % 8)", 128, "store", {**s, "i": (0, 1, 2, 3)},
                label="cp.async 16 B: As[s][tid/8+16i][4(tid%8)]"),
         Access("Bs", "s, tid // 8 + 16*i, 4*(tid % 8)", 128, "store", {**s, "i": (0, 1)},
                label="cp.async 16 B: Bs[s][tid/8+16i][4(tid%8)]"),
         Access("As", "s, lane + 32*(warp % 2), 4*kk", 128, "load", {**s, "kk": tuple(range(BK // 4))},
                label="a4 = float4 As[s][m=lane+32(warp%2)][4kk]"),
         Access("Bs", "s, 4*kk + j, 16*(warp // 2) + 4*q", 128, "load",
                {**s, "kk": tuple(range(BK // 4)), "j": (0, 1, 2, 3), "q": tuple(range(TN // 4))},
                label="b4 = float4 Bs[s][4kk+j][16(warp/2)+4q] (one address per warp)")),
        "fp32 GEMM tile loop, CTA 64x32, BK 32, block (32,4), two cp.async stages. As is the "
        "cp_async_double_buffer built-in: 16-byte rows written along K (free), float4 read down M "
        "by thread-per-row (8-way). Bs is filled the same way and read at one address per warp.",
        regs=regs,
    )


@dataclass(frozen=True)
class Variant:
    name: str
    layout: SmemLayout

    @property
    def kernel(self) -> str:
        return KERNEL_PREFIX + self.name

    @property
    def defines(self) -> dict[str, object]:
        d: dict[str, object] = {"SMK_KERNEL": self.kernel, "SMK_AS_PAD": self.layout.pad}
        t = self.layout.transform
        if isinstance(t, Swizzle):
            require(t.S >= t.B and t.M >= 2, f"{t} cannot be expressed by the kernel (needs S >= B, M >= 2)")
            d.update(SMK_AS_SWZ_B=t.B, SMK_AS_SWZ_M=t.M, SMK_AS_SWZ_S=t.S)
        else:
            require(t is None, f"transform {t!r} is not a Swizzle: the kernel cannot express it")
        return d

    @property
    def pattern(self) -> Pattern:
        return kernel_pattern(self.layout)

    @property
    def smem_bytes(self) -> int:
        return self.pattern.smem_bytes


@dataclass(frozen=True)
class Problem:
    M: int
    N: int
    K: int

    def __post_init__(self) -> None:
        require(self.M % BM == 0 and self.N % BN == 0 and self.K % BK == 0 and self.K // BK >= 1,
                f"M, N, K = {self.M}, {self.N}, {self.K}: need M % {BM}, N % {BN}, K % {BK} == 0")

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.N // BN, self.M // BM, 1)

    @property
    def ctas(self) -> int:
        return (self.M // BM) * (self.N // BN)

    @property
    def ktiles(self) -> int:
        return self.K // BK

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K


def advisor_check(regs: int) -> tuple[dict, list[Variant]]:
    """Advise on the unpadded kernel; return the advice summary and the three variants."""
    base = kernel_pattern(as_layout(), regs)
    advice = {a.array: a for a in advise(base)}
    a, b = advice["As"], advice["Bs"]
    require(not a.conflict_free, f"the unpadded As is predicted conflict-free ({a.wavefronts}/{a.ideal})")
    require(b.conflict_free, f"Bs is predicted to conflict ({b.wavefronts}/{b.ideal})")
    require(a.padding is not None and bool(a.swizzles), "the advisor found no padding or no swizzle for As")
    padded, swizzled = a.padding.layout, a.swizzles[0].layout
    require(padded.pad == EXPECTED_PAD and padded.transform is None,
            f"the advisor's padding is now {a.padding.summary}, not pad {EXPECTED_PAD}")
    require(swizzled.transform == EXPECTED_SWIZZLE and swizzled.pad == 0,
            f"the advisor's first swizzle is now {a.swizzles[0].summary}, not {EXPECTED_SWIZZLE}")
    variants = [Variant("unpadded", as_layout()), Variant("padded", padded), Variant("swizzled", swizzled)]
    for v in variants[1:]:
        r = analyze(v.pattern)
        require(r.conflict_free, f"{v.name}: the advisor's layout still conflicts ({r.wavefronts}/{r.ideal})")

    def cand(c) -> dict:
        return {"layout": c.layout.describe(), "summary": c.summary, "added_bytes": c.added_bytes,
                "wavefronts_two_ktiles": c.wavefronts, "blocks_per_sm_after": c.occupancy_after.blocks_per_sm}

    summary = {
        "array": "As", "regs": regs,
        "wavefronts_two_ktiles": a.wavefronts, "ideal_two_ktiles": a.ideal,
        "blocks_per_sm_before": a.occupancy_before.blocks_per_sm,
        "padding": cand(a.padding), "swizzles": [cand(c) for c in a.swizzles],
        "best": a.best.summary if a.best else None,
        "Bs": {"wavefronts_two_ktiles": b.wavefronts, "ideal_two_ktiles": b.ideal, "conflict_free": True},
        "recommended_variants_used": True,
    }
    return summary, variants


def builtin_tie_in() -> dict:
    """The As accesses of this kernel are the built-in cp_async_double_buffer pattern."""
    built = analyze(cp_async_double_buffer())
    ours = analyze(kernel_pattern())
    mine = [r for r in ours.accesses if r.access.array == "As"]
    got = (sum(r.wavefronts for r in mine), sum(r.ideal for r in mine))
    require(got == (built.wavefronts, built.ideal),
            f"As accesses give {got}, the built-in gives {(built.wavefronts, built.ideal)}")
    return {"builtin": "cp_async_double_buffer", "wavefronts": built.wavefronts, "ideal": built.ideal}


def predict(pattern: Pattern, problem: Problem) -> dict:
    """Per CTA per k-tile (one stage; both stages must agree) and per launch."""
    report = analyze(pattern)
    stages: dict[int, Counter] = {s: Counter() for s in STAGES}
    accesses = []
    for ar in report.accesses:
        op, arr = ar.access.op, ar.access.array
        per_access: dict[int, Counter] = {s: Counter() for s in STAGES}
        for ins in ar.instructions:
            for c in (stages[ins.loop["s"]], per_access[ins.loop["s"]]):
                c[f"{op}_wavefronts"] += ins.result.wavefronts
                c[f"{op}_ideal"] += ins.result.ideal
                c[f"{op}_instructions"] += 1
            stages[ins.loop["s"]][f"{arr}_{op}_wavefronts"] += ins.result.wavefronts
        require(per_access[0] == per_access[1], f"{ar.access.title}: the two stages differ")
        one = per_access[0]
        accesses.append({"label": ar.access.title, "array": arr, "op": op, "width": ar.access.width,
                         "wavefronts": one[f"{op}_wavefronts"], "ideal": one[f"{op}_ideal"],
                         "instructions": one[f"{op}_instructions"],
                         "degree": round(one[f"{op}_wavefronts"] / one[f"{op}_ideal"], 3)})
    require(stages[0] == stages[1], "the two stages are predicted differently")
    per = {k: int(v) for k, v in sorted(stages[0].items())}
    scale = problem.ctas * problem.ktiles
    return {"per_cta_per_ktile": per, "per_access_per_cta_per_ktile": accesses,
            "ctas": problem.ctas, "ktiles": problem.ktiles,
            "per_launch": {k: v * scale for k, v in per.items()}}


# --------------------------------------------------------------------------------------------
# Compile, host check, SASS


def compile_variant(v: Variant, arch: str) -> CompiledModule:
    return compile_module(KERNEL_PATH.read_text(), f"tiling_worked_example_{v.name}", arch=arch,
                          defines=v.defines)


def host_offset_check(v: Variant) -> dict:
    """Compile the .cu's offset functions with a host C++ compiler and compare every element's offset
    (and the shared-memory size) with the analyzer's layouts."""
    exe = host_compiler()
    if exe is None:
        return {"ok": None, "skipped": "no host C++ compiler found"}
    harness = "\n".join([
        "#include <cstdio>",
        f'#include "{KERNEL_PATH.name}"',
        "int main() {",
        f"  for (int s = 0; s < 2; ++s) for (int m = 0; m < {BM}; ++m) for (int k = 0; k < {BK}; ++k)",
        '    std::printf("%d ", smk_twe_as_offset(s, m, k));',
        '  std::printf("\\n");',
        f"  for (int s = 0; s < 2; ++s) for (int k = 0; k < {BK}; ++k) for (int n = 0; n < {BN}; ++n)",
        '    std::printf("%d ", smk_twe_bs_offset(s, k, n));',
        '  std::printf("\\n%d\\n", (int)SMK_TWE_SMEM_BYTES);',
        "  return 0;",
        "}",
    ])
    flags = [f"-D{k}={val}" for k, val in v.defines.items()]
    with tempfile.TemporaryDirectory() as d:
        src, binary = Path(d) / "offsets.cpp", Path(d) / "offsets"
        src.write_text(harness)
        try:
            subprocess.run([exe, "-std=c++17", "-O1", "-I", str(KERNEL_PATH.parent), *flags, "-o",
                            str(binary), str(src)], check=True, capture_output=True, text=True, timeout=300)
            out = subprocess.run([str(binary)], check=True, capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", "") or ""
            return {"ok": False, "compiler": exe, "error": f"{exc} {detail[-1500:]}"}
    lines = out.split("\n")
    got_a = [int(x) for x in lines[0].split()]
    got_b = [int(x) for x in lines[1].split()]
    got_smem = int(lines[2])
    p = v.pattern
    a, b = p.arrays["As"], p.arrays["Bs"]
    want_a = [a.physical(a.offset((s, m, k))) for s in range(2) for m in range(BM) for k in range(BK)]
    want_b = [(b.base + b.physical(b.offset((s, k, n))) * 4) // 4
              for s in range(2) for k in range(BK) for n in range(BN)]
    return {"ok": got_a == want_a and got_b == want_b and got_smem == p.smem_bytes, "compiler": exe,
            "as_mismatches": sum(g != w for g, w in zip(got_a, want_a, strict=True)),
            "bs_mismatches": sum(g != w for g, w in zip(got_b, want_b, strict=True)),
            "smem_bytes": {"kernel": got_smem, "pattern": p.smem_bytes}}


def parse_sass(text: str) -> dict[str, int]:
    """Counts of the shared-memory instructions in ``cuobjdump -sass`` text of one kernel.

    ``@!PT LDS RZ, [RZ]`` (never executed: its predicate is constant false) is counted apart; ptxas
    puts such placeholders next to cp.async groups."""
    counts = {"LDS.128": 0, "LDS_other": 0, "LDS_never_executed": 0, "STS": 0, "LDGSTS": 0,
              "LDL_STL": 0, "FFMA": 0}
    op = re.compile(r"^(@!?U?P\w+\s+)?(LDS|STS|LDGSTS|LDL|STL|FFMA)(\.[A-Z0-9_.]+)?(?=[\s;])")
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-fA-F]+\*/\s*([^;]*);", line)
        hit = op.match(m.group(1).strip()) if m else None
        if not hit:
            continue
        pred, name, mods = (hit.group(1) or "").strip(), hit.group(2), hit.group(3) or ""
        if name == "LDS":
            if pred == "@!PT":
                counts["LDS_never_executed"] += 1
            elif mods == ".128":
                counts["LDS.128"] += 1
            else:
                counts["LDS_other"] += 1
        elif name in ("LDL", "STL"):
            counts["LDL_STL"] += 1
        else:
            counts[name] += 1
    return counts


def sass_info(module: CompiledModule, kernel: str) -> dict | None:
    try:
        counts = parse_sass(dump_sass(module.cubin, function=kernel, timeout=300))
    except (ToolNotFoundError, OSError, subprocess.SubprocessError):
        return None
    counts["ok"] = (counts["LDS.128"] == SASS_LDS128 and counts["LDS_other"] == 0 and counts["STS"] == 0
                    and counts["LDGSTS"] == SASS_LDGSTS and counts["LDL_STL"] == 0)
    return counts


# --------------------------------------------------------------------------------------------
# GPU: correctness, timing, the ncu driver


def _inputs(problem: Problem, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.rand(problem.M, problem.K, device="cuda", generator=g) * 2 - 1
    b = torch.rand(problem.K, problem.N, device="cuda", generator=g) * 2 - 1
    return a, b


def _kernel(v: Variant):
    from smemkit.runtime.launch import KernelModule

    module = KernelModule(KERNEL_PATH.read_text(), f"tiling_worked_example_{v.name}", v.defines)
    return module.function(v.kernel, ("ptr", "ptr", "ptr", "i32", "i32", "i32"))


def gpu_measure(variants: list[Variant], problem: Problem, args) -> dict:
    """rel_err against fp64 torch, median time (time_gpu), driver occupancy, for each variant."""
    import torch

    from smemkit.runtime.timing import time_gpu

    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = _inputs(problem, args.seed)
    ref = a.double() @ b.double()
    ref_norm, ref_max = ref.norm().item(), ref.abs().max().item()
    c = torch.empty(problem.M, problem.N, device="cuda")
    sm_count = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    out: dict = {}
    for v in variants:
        fn = _kernel(v)

        def launch(fn=fn, v=v):
            fn.launch(problem.grid, BLOCK, a, b, c, problem.M, problem.N, problem.K, smem=v.smem_bytes)

        c.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        err = c.double() - ref
        finite = bool(torch.isfinite(c).all())
        rel = err.norm().item() / ref_norm if finite else None  # None: unwritten or non-finite output
        max_rel = err.abs().max().item() / ref_max if finite else None
        t = time_gpu(launch, warmup=args.warmup, reps=args.reps)
        out[v.name] = {"rel_err": rel, "max_abs_err_over_max_ref": max_rel,
                       "correct": finite and rel <= REL_TOL and max_rel <= 10 * REL_TOL,
                       "ms": t.median_ms, "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "samples": t.samples,
                       "gflops": problem.flops / (t.median_ms * 1e6),
                       "driver_blocks_per_sm": fn.max_active_ctas(128, v.smem_bytes) // sm_count}
    t = time_gpu(lambda: torch.matmul(a, b, out=c), warmup=args.warmup, reps=args.reps)
    out["torch_fp32_matmul"] = {"ms": t.median_ms, "gflops": problem.flops / (t.median_ms * 1e6),
                                "note": "cuBLAS fp32 (TF32 off), for scale only"}
    return out


def driver(spec_path: Path, out_path: Path) -> int:
    """Launch each variant once (runs under ncu)."""
    import torch

    spec = json.loads(spec_path.read_text())
    problem = Problem(*spec["problem"])
    report: dict = {"launched": [], "error": None}
    try:
        a, b = _inputs(problem, spec["seed"])
        c = torch.zeros(problem.M, problem.N, device="cuda")
        for item in spec["variants"]:
            v = Variant(item["name"], layout_from_json(item["layout"]))
            _kernel(v).launch(problem.grid, BLOCK, a, b, c, problem.M, problem.N, problem.K,
                              smem=v.smem_bytes)
            report["launched"].append(v.kernel)
        torch.cuda.synchronize()
    except Exception as exc:  # keep what ran
        report["error"] = f"{type(exc).__name__}: {exc}"
    out_path.write_text(json.dumps(report))
    return 0 if report["error"] is None else 1


def layout_to_json(layout: SmemLayout) -> dict:
    t = layout.transform
    return {"pad": layout.pad, "swizzle": [t.B, t.M, t.S] if isinstance(t, Swizzle) else None}


def layout_from_json(d: dict) -> SmemLayout:
    return as_layout(d["pad"], Swizzle(*d["swizzle"]) if d["swizzle"] else None)


# --------------------------------------------------------------------------------------------
# Nsight Compute


def supported_metrics(ncu: str) -> set[str] | None:
    """Base metric names ``ncu --query-metrics`` lists for this GPU; None if it cannot tell."""
    try:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    names = set(re.findall(r"^\s*([a-z][a-z0-9]*__[a-z0-9_]+)", proc.stdout, re.MULTILINE))
    return names or None


def choose_metrics(known: set[str] | None) -> tuple[list[str], list[str]]:
    """(metrics to ask for, optional metrics left out because this ncu does not list them)."""
    chosen, dropped = [], []
    for i, (_, metric) in enumerate(METRICS):
        if i < REQUIRED_METRICS or known is None or metric.split(".")[0] in known:
            chosen.append(metric)
        else:
            dropped.append(metric)
    return chosen, dropped


def run_ncu(ncu: str, spec: Path, workdir: Path, timeout: int) -> dict:
    chosen, dropped = choose_metrics(supported_metrics(ncu))
    required = [m for _, m in METRICS[:REQUIRED_METRICS]]

    def command(metrics: list[str], log: Path, driver_out: Path) -> list[str]:
        return [ncu, "--clock-control", "none", "--target-processes", "all",
                "--kernel-name", f"regex:^{KERNEL_PREFIX}", "--metrics", ",".join(metrics),
                "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(log),
                sys.executable, str(Path(__file__).resolve()), "--driver", "--driver-spec", str(spec),
                "--driver-out", str(driver_out)]

    info = profile_attempts(ncu, (chosen, required) if chosen != required else (required,), command,
                            timeout, workdir)
    info["metrics_not_listed_by_ncu"] = dropped
    return info


# --------------------------------------------------------------------------------------------
# Records and report


def _first(measured: dict, *keys: str):
    for k in keys:
        if measured.get(k) is not None:
            return measured[k]
    return None


def variant_record(v: Variant, module: CompiledModule, pred: dict, host: dict, sass: dict | None,
                   gpu: dict | None, measured: dict | None) -> dict:
    usage = module.resources.get(v.kernel)
    regs = usage.registers if usage else 64
    occ = occupancy("sm_90", 128, regs, v.smem_bytes)
    launch = pred["per_launch"]
    placeholders = (sass or {}).get("LDS_never_executed", 0)
    rec: dict = {
        "variant": v.name, "kernel": v.kernel, "layout": v.layout.describe(),
        "pad": v.layout.pad, "swizzle": str(v.layout.transform) if v.layout.transform else None,
        "defines": v.defines, "smem_bytes": v.smem_bytes,
        "registers": usage.registers if usage else None, "spills": usage.spills if usage else None,
        "stack_bytes": usage.stack_bytes if usage else None,
        "occupancy_sm90": {"blocks_per_sm": occ.blocks_per_sm, "occupancy": round(occ.occupancy, 4),
                           "limiting": list(occ.limiting)},
        "host_offset_check": host, "sass": sass,
        "predicted": pred,
        "predicted_load_wavefronts": launch["load_wavefronts"],
        "predicted_store_wavefronts": launch["store_wavefronts"],
        "predicted_load_ideal": launch["load_ideal"], "predicted_store_ideal": launch["store_ideal"],
        "predicted_load_instructions": launch["load_instructions"],
        "predicted_store_instructions": launch["store_instructions"],
        # SASS has `@!PT LDS RZ, [RZ]` placeholders next to the cp.async groups (no lane active, so no
        # wavefront); if the counter counts them, it counts this many more LDS instructions. Half of
        # them sit in the loop body (run for k-tiles 1..T-1), half before the loop (k-tile 0).
        "sass_placeholder_lds_per_launch": (placeholders // 2 * BLOCK[1] * pred["ctas"] * pred["ktiles"]
                                            if sass else None),
        "measured_load_wavefronts": None, "measured_store_wavefronts": None,
        "measured_ldgsts_wavefronts": None, "measured_shared_wavefronts_all": None,
        "measured_load_instructions": None, "measured_store_instructions": None,
        "measured_ldgsts_instructions": None, "measured": None,
        "load_match": None, "store_counter": None, "store_match": None, "load_instructions_match": None,
        "ms": None, "gflops": None, "rel_err": None, "correct": None, "timing": None,
    }
    if gpu is not None:
        rec.update(ms=gpu["ms"], gflops=gpu["gflops"], rel_err=gpu["rel_err"], correct=gpu["correct"],
                   timing={k: gpu[k] for k in ("p20_ms", "p80_ms", "samples", "max_abs_err_over_max_ref",
                                                 "driver_blocks_per_sm")})
    if measured is not None:
        rec["measured"] = measured
        ld, st = measured.get("wavefronts_load"), measured.get("wavefronts_store")
        ldgsts_wf = _first(measured, "wavefronts_ldgsts", "wavefronts_ldgsts_sass")
        rec.update(measured_load_wavefronts=ld, measured_store_wavefronts=st,
                   measured_ldgsts_wavefronts=ldgsts_wf,
                   measured_shared_wavefronts_all=measured.get("wavefronts_shared_all"),
                   measured_load_instructions=measured.get("instructions_load"),
                   measured_store_instructions=measured.get("instructions_store"),
                   measured_ldgsts_instructions=_first(measured, "instructions_ldgsts_sass",
                                                       "instructions_ldgsts"))
        if ld is not None:
            rec["load_match"] = ld == launch["load_wavefronts"]
        # cp.async (LDGSTS) writes are modelled as 128-bit stores; say which counter, if any, holds them.
        want = launch["store_wavefronts"]
        if st == want:
            rec["store_counter"] = "op_st"
        elif ldgsts_wf == want:
            rec["store_counter"] = "ldgsts"
        rec["store_match"] = rec["store_counter"] is not None if (st, ldgsts_wf) != (None, None) else None
        ins = measured.get("instructions_load")
        if ins is not None:
            if ins == launch["load_instructions"]:
                rec["load_instructions_match"] = "model"
            elif rec["sass_placeholder_lds_per_launch"] is not None and \
                    ins == launch["load_instructions"] + rec["sass_placeholder_lds_per_launch"]:
                rec["load_instructions_match"] = "model + SASS placeholders"
            else:
                rec["load_instructions_match"] = False
    return rec


def add_deltas(records: list[dict]) -> None:
    """Load wavefronts saved against the unpadded kernel: these involve As only, so they do not
    depend on how the hardware counts Bs's one-address float4 reads."""
    base = records[0]
    for r in records:
        pred = base["predicted_load_wavefronts"] - r["predicted_load_wavefronts"]
        meas = (None if None in (base["measured_load_wavefronts"], r["measured_load_wavefronts"])
                else base["measured_load_wavefronts"] - r["measured_load_wavefronts"])
        r["load_wavefronts_saved_vs_unpadded"] = {"predicted": pred, "measured": meas,
                                                  "match": None if meas is None else meas == pred}
        r["speedup_vs_unpadded"] = (base["ms"] / r["ms"]) if base["ms"] and r["ms"] else None


def _fmt(x, width: int, spec: str = "") -> str:
    return f"{'-' if x is None else format(x, spec):>{width}}"


def print_table(result: dict) -> None:
    p = result["problem"]
    print(f"\nfp32 GEMM {p['M']}x{p['N']}x{p['K']}, CTA {BM}x{BN}, BK {BK}, {p['ctas']} CTAs x {p['ktiles']} "
          f"k-tiles; wavefronts per launch (predicted / measured by ncu)")
    print(f"{'variant':<9} {'As layout':<30} {'pred ld wf':>12} {'meas ld wf':>12} {'pred st wf':>11} "
          f"{'meas st':>11} {'meas ldgsts':>11} {'ms':>8} {'GFLOP/s':>8} {'rel_err':>8}")
    for r in result["variants"]:
        print(f"{r['variant']:<9} {r['layout']:<30} {r['predicted_load_wavefronts']:>12} "
              f"{_fmt(r['measured_load_wavefronts'], 12)} {r['predicted_store_wavefronts']:>11} "
              f"{_fmt(r['measured_store_wavefronts'], 11)} {_fmt(r['measured_ldgsts_wavefronts'], 11)} "
              f"{_fmt(r['ms'], 8, '.3f')} {_fmt(r['gflops'], 8, '.0f')} {_fmt(r['rel_err'], 8, '.1e')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help=f"JSON output (default {DEFAULT_OUT}; the dry run writes to "
                    "the temp folder unless --out is given)")
    ap.add_argument("--dry-run", action="store_true", help="compile and predict only; no GPU")
    ap.add_argument("--ncu", action="store_true", help="measure wavefronts with one Nsight Compute run")
    ap.add_argument("--ncu-path", help="path to ncu (default: PATH, then /opt/nvidia/nsight-compute/*/ncu)")
    ap.add_argument("--ncu-timeout", type=int, default=90, help="seconds for one ncu run")
    ap.add_argument("--arch", default="sm_90a", help="NVRTC target for the compile checks (default sm_90a)")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="copy the raw ncu CSV and driver JSON into this folder")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--driver-spec", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--driver-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.driver:
        return driver(args.driver_spec, args.driver_out or Path("twe_driver.json"))

    t0 = time.time()
    problem = Problem(args.size, args.size, args.size)
    # 1. compile the unpadded kernel (its register count feeds the advisor's occupancy), advise.
    unpadded = Variant("unpadded", as_layout())
    modules = {"unpadded": compile_variant(unpadded, args.arch)}
    regs = modules["unpadded"].resources[unpadded.kernel].registers
    advice, variants = advisor_check(regs)
    tie_in = builtin_tie_in()
    for v in variants[1:]:
        modules[v.name] = compile_variant(v, args.arch)
    print(f"advisor on As (two k-tiles): {advice['wavefronts_two_ktiles']} wavefronts, ideal "
          f"{advice['ideal_two_ktiles']}; padding: {advice['padding']['summary']} "
          f"(+{advice['padding']['added_bytes']} B), swizzle: {advice['swizzles'][0]['summary']}; "
          f"3 variants compiled for {args.arch} in {time.time() - t0:.1f} s", flush=True)

    preds = {v.name: predict(v.pattern, problem) for v in variants}
    hosts = {v.name: host_offset_check(v) for v in variants}
    sass = {v.name: sass_info(modules[v.name], v.kernel) for v in variants}

    gpu = None
    ncu_info: dict = {"skipped": "dry run" if args.dry_run else "--ncu not given"}
    if not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU visible: use --dry-run")
        gpu = gpu_measure(variants, problem, args)
        for name in VARIANTS:
            g = gpu[name]
            print(f"{name:<9} {g['ms']:.3f} ms  {g['gflops']:.0f} GFLOP/s  rel_err "
                  f"{_fmt(g['rel_err'], 0, '.2e')}{'' if g['correct'] else '  WRONG RESULT'}", flush=True)
        if args.ncu:
            ncu = find_ncu(args.ncu_path)
            if ncu is None:
                ncu_info = {"skipped": "ncu not found"}
            else:
                with tempfile.TemporaryDirectory(prefix="tiling_worked_example_") as tmp:
                    workdir = Path(tmp)
                    spec = workdir / "spec.json"
                    layouts = [{"name": v.name, "layout": layout_to_json(v.layout)} for v in variants]
                    spec.write_text(json.dumps({"problem": [problem.M, problem.N, problem.K],
                                                "seed": args.seed, "variants": layouts}))
                    print(f"profiling {len(variants)} kernels with {ncu} ...", flush=True)
                    ncu_info = run_ncu(ncu, spec, workdir, args.ncu_timeout)
                    if args.keep:
                        args.keep.mkdir(parents=True, exist_ok=True)
                        for f in workdir.iterdir():
                            shutil.copy(f, args.keep / f.name)
    results = ncu_info.pop("results", None) or {}
    records = []
    for v in variants:
        raw = results.get(v.kernel)
        measured = None if raw is None else {key: raw.get(metric) for key, metric in METRICS
                                             if metric in raw}
        records.append(variant_record(v, modules[v.name], preds[v.name], hosts[v.name], sass[v.name],
                                      None if gpu is None else gpu[v.name], measured))
    add_deltas(records)

    from smemkit.hw.environment import device_block, provenance

    device = device_block()
    result = {
        "benchmark": "tiling_worked_example", "issue": 7,
        "provenance": provenance(device,
                                 None if argv is None else ["benchmarks/tiling_worked_example.py", *argv]),
        "dry_run": args.dry_run, "arch": args.arch, "device": device,
        "kernel_file": str(KERNEL_PATH.relative_to(HERE.parent)),
        "problem": {"M": problem.M, "N": problem.N, "K": problem.K, "dtype": "fp32", "BM": BM,
                    "BN": BN, "BK": BK, "TN": TN, "block": list(BLOCK), "grid": list(problem.grid),
                    "ctas": problem.ctas, "ktiles": problem.ktiles, "flops": problem.flops},
        "advisor": advice, "builtin": tie_in,
        "ncu": {**ncu_info, "metric_keys": dict(METRICS)},
        "reference": None if gpu is None else gpu["torch_fp32_matmul"],
        "variants": records,
        "seconds": round(time.time() - t0, 1),
    }
    out = args.out or (Path(tempfile.gettempdir()) / "tiling_worked_example.dry-run.json" if args.dry_run
                       else DEFAULT_OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, allow_nan=False) + "\n")
    print(f"wrote {out}")
    print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
