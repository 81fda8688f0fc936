"""NVIDIA compute-sanitizer over every CUDA kernel smemkit ships (issue 31).

    python3 benchmarks/sanitizer.py --out benchmarks/results/h200/sanitizer.json   # on the GPU
    python3 benchmarks/sanitizer.py --list                                        # no GPU needed

Kernels, in groups (``--list`` prints each group's variants and shapes per tool):
  reduction.<workload>  the generated kernels of each built-in workload: staged, re-read (plain,
                        looped at 512 threads, L2-capped, one CTA per row), cluster P = 2/4/8/16,
                        the prefetching persistent variants and the register kernels, at N = 1,
                        odd widths and widths that are not a multiple of the 16-byte vector; plus
                        persistent grids that loop over more rows than they hold. The Triton
                        kernels are left out unless ``--triton``: Triton generates them, not
                        smemkit's CUDA sources, and the sanitizer's findings there would be Triton's.
  offload.split_gemv    split_gemv.cu through ``split_linear(path="kernel")``: both dtypes, awkward
                        shapes, forced k-splits and the host-read variants (host_stage / host_load)
  offload.split_attention, offload.direct_gemm, offload.ring   the other offload paths
  probe.hw, probe.congestion, probe.host_paths   hw/probe_kernels.cu, congestion.cu, host_paths.cu
  atomics.micro, atomics.histograms               atomics/kernels.cu
  tiling.micro          the tiling validation suite's microkernels (one block each)
  control.<kernel>      racecheck only: four calibration kernels (racecheck_controls.cu, not
                        shipped) that hand a shared-memory ring over correctly in three ways and
                        not at all in the fourth, so a hazard count on a shipped kernel can be
                        read against what the tool says of a known-correct and a known-racy one

Design: for each (tool, group) one child process runs

    compute-sanitizer --tool T --report-api-errors no --print-limit 100 --error-exitcode 99
        --target-processes application-only python3 benchmarks/sanitizer.py --child GROUP ...

The child runs each kernel of the group once on small inputs, writes what ran, was skipped (a
variant this GPU or width cannot run) or failed to a JSON file and exits. The parent reads the
tool's summary from the child's output ("ERROR SUMMARY: N errors"; racecheck's "RACECHECK
SUMMARY: N hazards displayed (E errors, W warnings)") and writes one record per (group, tool)
with the error count, the command, the wall time and the cases. The counts cover every kernel
the child launches (torch's and cuBLAS's too); a record's report excerpt names the kernel.
Before the tools, every group runs once without a sanitizer: that fills the kernel cache (the
tools' children then load cubins, not compile them) and tells a kernel that fails on its own from
one the tool flags. racecheck and initcheck are the slow tools: they get fewer widths and patterns
per variant, never fewer variant kinds. Children run ``--jobs`` at a time; ``--deadline`` bounds
the whole run, so the file is written even when the machine's time is short.

compute-sanitizer is looked for on PATH, in $CUDA_HOME/bin (and the other toolkit roots smemkit
knows), /usr/local/cuda/bin, and the pip wheel ``nvidia-cuda-sanitizer-api``
(``nvidia/cu13/bin/compute-sanitizer``, a shell wrapper around
``nvidia/cu13/compute-sanitizer/compute-sanitizer``). Without it the output file records the
refusal and the command exits 2; it exits 1 when any run found errors or failed.
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = Path(__file__).resolve()
try:
    import smemkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(HERE.parent / "src"))

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError  # noqa: E402
from smemkit.runtime.paths import find_tool  # noqa: E402

DEFAULT_OUT = HERE / "results" / "h200" / "sanitizer.json"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
SLOW_TOOLS = ("racecheck", "initcheck")
ERROR_EXIT = 99  # the tool's exit code when the child succeeded but the tool found errors
# --target-processes application-only: the child is the interpreter itself and starts no process
# that launches kernels, so the tool need not follow any.
SANITIZER_FLAGS = ("--report-api-errors", "no", "--print-limit", "100", "--error-exitcode",
                   str(ERROR_EXIT), "--target-processes", "application-only")
MIN_CHILD_S = 15.0  # less time than this left before the deadline: a child is not started
INSTALL_HINT = "pip install nvidia-cuda-sanitizer-api (or the CUDA toolkit)"

# Reduction variants as run() names them, with the cluster size; the same set the GPU tests use.
REDUCTION_VARIANTS = (("staged", None), ("reread", None), ("reread_t512", None), ("cluster", 2),
                      ("cluster", 4), ("cluster", 8), ("cluster", 16), ("staged_pf", None),
                      ("cluster_pf", 2), ("cluster_pf", 8), ("reread_l2", None),
                      ("reread_l2_t512", None), ("reread_l2_rows", None),
                      ("reread_l2_t512_rows", None), ("regs", None), ("regs_t512", None),
                      ("regs_t256", None))
# N = 1; odd (31); a multiple of the 4-float vector but of no thread count (1000); odd past 4096
# (4099); one short of 65536
WIDTHS = (1, 31, 1000, 4099, 65535)
SLOW_WIDTHS = (1, 31, 4099)
PERSISTENT_VARIANTS = (("staged_pf", None), ("cluster_pf", 2), ("cluster", 4))
PERSISTENT_N = 4097


class CaseSkipped(Exception):
    """The case cannot run here (a variant illegal at this width, a knob the API lacks)."""


@dataclass(frozen=True)
class Case:
    """One kernel launch of a group: which kernel or variant, on what input, and how."""

    variant: str
    shape: str
    run: Callable[[], None]

    @property
    def label(self) -> str:
        return f"{self.variant} [{self.shape}]"


@dataclass(frozen=True)
class Group:
    """Kernels sanitized together in one child process per tool."""

    sources: str  # the CUDA sources or generator the group's kernels come from
    cases: Callable[[str, bool], list[Case]]  # (tool, with_triton) -> cases
    racecheck_note: str | None = None
    tools: tuple[str, ...] = TOOLS  # the tools it runs under


# ---------------------------------------------------------------- reduction
def _reduction_once(workload: str, variant: str, P: int | None, M: int, N: int) -> None:
    import torch

    from smemkit.reduction import BUILTIN, run
    from smemkit.reduction.workloads import example_inputs

    gen = torch.Generator(device="cuda").manual_seed(M * 100003 + N)
    tensors, scalars = example_inputs(workload, M, N, device="cuda", generator=gen)
    try:
        run(BUILTIN[workload], tensors, scalars, variant=variant, cluster_size=P)
    except InvalidArgumentError as exc:
        if variant.startswith("regs"):  # a row too wide for the register kernel: the caller's width
            raise CaseSkipped(str(exc)) from exc
        raise


def _reduction_persistent(workload: str, variant: str, P: int | None) -> None:
    """M = 2 x the resident grid + 3 rows: every CTA of a persistent kernel goes round twice."""
    import torch

    from smemkit.reduction import BUILTIN
    from smemkit.reduction.api import resolve_variant
    from smemkit.reduction.kernels import grid_clusters, legality, require_kernel_support

    spec = BUILTIN[workload]
    if variant == "cluster" and not spec.columns:
        raise CaseSkipped("one cluster per row (no column parameters): not persistent")
    device = torch.cuda.current_device()
    chosen = resolve_variant(spec, 1, PERSISTENT_N, torch.device("cuda"), variant, P)
    reason = legality(spec, chosen, PERSISTENT_N, require_kernel_support(device).smem_per_block_optin, 16)
    if reason:
        raise CaseSkipped(reason)
    grid = grid_clusters(spec, chosen, 1 << 20, PERSISTENT_N, device)
    _reduction_once(workload, variant, P, 2 * grid + 3, PERSISTENT_N)


def _reduction_few_ctas(workload: str) -> None:
    """reread_l2 with its L2 budget cut to a few CTAs, each looping over many rows."""
    key = "SMEMKIT_REREAD_L2_FRACTION"
    before = os.environ.get(key)
    os.environ[key] = "0.001"
    try:
        _reduction_once(workload, "reread_l2", None, 37, PERSISTENT_N)
    finally:
        if before is None:
            del os.environ[key]
        else:
            os.environ[key] = before


def _variant_label(variant: str, P: int | None) -> str:
    return variant if P is None else f"{variant}_p{P}"


def reduction_cases(workload: str, tool: str, with_triton: bool) -> list[Case]:
    widths = SLOW_WIDTHS if tool in SLOW_TOOLS else WIDTHS
    variants = [*REDUCTION_VARIANTS, *([("triton", None)] if with_triton else [])]
    cases = []
    for variant, P in variants:
        for N in widths:
            M = 5 if N == 1 else 3
            cases.append(Case(_variant_label(variant, P), f"M={M} N={N}",
                              functools.partial(_reduction_once, workload, variant, P, M, N)))
    for variant, P in PERSISTENT_VARIANTS:
        cases.append(Case(_variant_label(variant, P), f"M=2*grid+3 N={PERSISTENT_N}",
                          functools.partial(_reduction_persistent, workload, variant, P)))
    cases.append(Case("reread_l2", f"few CTAs M=37 N={PERSISTENT_N}",
                      functools.partial(_reduction_few_ctas, workload)))
    return cases


# ---------------------------------------------------------------- offload
def _dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]


def _linear_inputs(n: int, k: int, m: int, dtype: str):
    import torch

    g = torch.Generator(device="cuda").manual_seed(n * 7 + k * 3 + m)
    w = (torch.randn(n, k, device="cuda", generator=g) * k ** -0.5).to(_dtype(dtype))
    x = torch.randn(m, k, device="cuda", generator=g).to(_dtype(dtype))
    b = torch.randn(n, device="cuda", generator=g).to(_dtype(dtype))
    return w, x, b


def _knobs(fn: Callable, **knobs: object) -> dict:
    """``knobs`` when ``fn`` takes them all, else CaseSkipped naming the missing ones (the split
    kernel's experiment arguments may move off the public signature)."""
    import inspect

    missing = [k for k in knobs if k not in inspect.signature(fn).parameters]
    if missing:
        raise CaseSkipped(f"{fn.__name__} takes no {', '.join(missing)}")
    return knobs


def _split_linear(n: int, k: int, m: int, ratio: float, dtype: str, path: str, **knobs: object) -> None:
    import torch

    from smemkit.offload import SplitWeight, split_linear

    w, x, b = _linear_inputs(n, k, m, dtype)
    with SplitWeight(w, ratio) as sw:
        split_linear(x, sw, b, path=path, **_knobs(split_linear, **knobs))
        torch.cuda.synchronize()


def _linear_case(variant: str, n: int, k: int, m: int, ratio: float, dtype: str, path: str,
                 **knobs: object) -> Case:
    extra = "".join(f" {key}={value}" for key, value in knobs.items())
    return Case(variant, f"{dtype} n={n} k={k} batch={m} r={ratio}{extra}",
                functools.partial(_split_linear, n, k, m, ratio, dtype, path, **knobs))


GEMV_SHAPES = ((1, 64, 1, 1.0), (7, 136, 5, 0.5), (100, 520, 17, 0.05), (300, 4096, 8, 0.25))


def split_gemv_cases(tool: str, with_triton: bool) -> list[Case]:
    cases = [_linear_case("split_gemv", *shape, dtype, "kernel")
             for dtype in ("bf16", "fp16") for shape in GEMV_SHAPES]
    cases.append(_linear_case("split_gemv k-split", 203, 1000, 24, 0.3, "bf16", "kernel",
                              split_g=2, split_h=3, host_ctas=5))
    cases += [_linear_case("split_gemv host_stage", 7, 72, 3, 1.0, "bf16", "kernel", host_stage=s)
              for s in (0, 2, 3)]
    cases += [_linear_case("split_gemv host_load", 203, 1000, 40, 0.5, "bf16", "kernel", host_load=h)
              for h in (1, 2)]
    return cases


def ring_cases(tool: str, with_triton: bool) -> list[Case]:
    return [_linear_case("ring", 300, 520, 9, 0.5, "bf16", "ring"),
            _linear_case("ring", 1000, 1032, 64, 0.3, "fp16", "ring")]


def _direct_planned(m: int, n: int, k: int, ratio: float, P: int, split: int) -> None:
    import torch

    from smemkit.offload import SplitWeight
    from smemkit.offload import direct_gemm as dg

    w, x, b = _linear_inputs(n, k, m, "bf16")
    with SplitWeight(w, ratio) as sw:
        plan = dg.plan_direct(m, sw.host_rows, k, P=P, split=split, streams=3, stages=3)
        out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        dg.direct_linear(x, sw, b, out, plan)
        torch.cuda.synchronize()


def direct_gemm_cases(tool: str, with_triton: bool) -> list[Case]:
    cases = [_linear_case("direct", 1, 64, 64, 1.0, "bf16", "direct"),
             _linear_case("direct", 7, 104, 136, 0.5, "fp16", "direct"),
             _linear_case("direct", 130, 296, 200, 0.4, "bf16", "direct")]
    for P, split in ((1, 3), (2, 1), (4, 3)):
        cases.append(Case(f"direct P={P} split={split}", "bf16 m=256 n=300 k=576 r=0.5",
                          functools.partial(_direct_planned, 256, 300, 576, 0.5, P, split)))
    return cases


def _attention(batch: int, h_kv: int, group: int, seq_len: int, ratio: float, dtype: str,
               awkward: bool, **chunks: int) -> None:
    import torch

    from smemkit.offload import SplitKVCache, split_decode_attention

    g = torch.Generator(device="cuda").manual_seed(batch * 31 + seq_len)
    q = torch.randn(batch, h_kv * group, 128, device="cuda", generator=g).to(_dtype(dtype))
    k = torch.randn(batch, h_kv, seq_len, 128, device="cuda", generator=g).to(_dtype(dtype))
    v = torch.randn(batch, h_kv, seq_len, 128, device="cuda", generator=g).to(_dtype(dtype))
    lengths = None
    if awkward:
        picks = [1, 7, min(1000, seq_len), seq_len, max(1, seq_len - 1)]
        lengths = torch.tensor([picks[i % len(picks)] for i in range(batch)], dtype=torch.int32,
                               device="cuda")
    with SplitKVCache(k, v, ratio) as cache:
        split_decode_attention(q, cache, lengths, force_kernel=True, **chunks)
        torch.cuda.synchronize()


ATTENTION_SHAPES = ((1, 1, 1, 1, 1.0, False), (3, 2, 8, 77, 0.5, True), (5, 4, 2, 1030, 0.5, True),
                    (2, 2, 4, 300, 0.0, False))


def attention_cases(tool: str, with_triton: bool) -> list[Case]:
    cases = []
    for dtype in ("bf16", "fp16"):
        for b, h, grp, L, r, awkward in ATTENTION_SHAPES:
            cases.append(Case("split_attention", f"{dtype} B={b} H_kv={h} group={grp} L={L} r={r}"
                              f"{' awkward lengths' if awkward else ''}",
                              functools.partial(_attention, b, h, grp, L, r, dtype, awkward)))
    cases.append(Case("split_attention forced splits", "bf16 B=3 H_kv=2 group=8 L=77 r=0.5 chunks 3/2",
                      functools.partial(_attention, 3, 2, 8, 77, 0.5, "bf16", True, chunks_g=3,
                                        chunks_h=2)))
    return cases


# ---------------------------------------------------------------- MoE experts
MOE_SHAPES = ((5, 1, 8, 2, 1, 1), (5, 33, 264, 2, 7, 1), (4, 40, 136, 0, 40, 2), (3, 17, 520, 3, 300, 1))


def _moe(e: int, n: int, k: int, n_hbm: int, p: int, row_div: int, dtype: str) -> None:
    """One ``expert_gemv`` over E experts (the last ``e - n_hbm`` in pinned memory), P pairs, one
    of them routed to no expert (its output row left alone)."""
    import torch

    from smemkit.offload import PinnedBuffer
    from smemkit.offload.moe_gemv import expert_gemv, expert_pointers

    dt = torch.bfloat16 if dtype == "bf16" else torch.float16
    w = torch.randn(e, n, k, device="cuda").to(dt)
    hbm = w[:n_hbm].clone()
    buffer = PinnedBuffer((e - n_hbm) * n * k * w.element_size())
    try:
        view = None
        if n_hbm < e:
            buffer.tensor(dt, (e - n_hbm, n, k)).copy_(w[n_hbm:].cpu())
            view = buffer.cuda_view(dt, (e - n_hbm, n, k))
        table = expert_pointers(hbm, view)
        pair = torch.randint(0, e, (p,), dtype=torch.int32, device="cuda")
        pair[-1] = -1
        x = torch.randn(-(-p // row_div), k, device="cuda").to(dt)
        y = torch.zeros(p, n, device="cuda", dtype=dt)
        expert_gemv(table, x, pair, row_div, n, e, n_hbm, host_ctas=3, out=y)
        torch.cuda.synchronize()
    finally:
        buffer.free()


def moe_cases(tool: str, with_triton: bool) -> list[Case]:
    return [Case("moe_gemv", f"{dtype} E={e} N={n} K={k} in HBM {h} pairs={p} row_div={d}",
                 functools.partial(_moe, e, n, k, h, p, d, dtype))
            for dtype in ("bf16", "fp16") for e, n, k, h, p, d in MOE_SHAPES]


# ---------------------------------------------------------------- probes
PROBE_SMEM = 16384  # CHASE_WORDS 32-bit words: placement does not matter under a sanitizer


@functools.cache
def _probe_module():
    from smemkit.runtime.compiler import package_source
    from smemkit.runtime.launch import KernelModule

    return KernelModule(package_source("hw/probe_kernels.cu"), "probe_kernels")


def _probe_kernel(name: str, params: tuple[str, ...]):
    return _probe_module().function(name, params)


def _probe_dsmem(kind: str, arg: int, P: int = 2) -> None:
    import torch

    params = ("ptr", "i32", "i32")
    out = torch.zeros(P + 2, dtype=torch.int64, device="cuda")
    if kind == "chase":
        _probe_kernel("smem_chase", params).launch(2, 256, out, 64, arg, cluster=2, smem=PROBE_SMEM)
    elif kind == "rate":
        _probe_kernel("smem_rate", params).launch(2, 256, out, 32, arg, cluster=2, smem=PROBE_SMEM)
    else:
        barrier = _probe_kernel("cluster_barrier", params)
        if barrier.max_active_clusters(P, 256, 128) < 1:
            raise CaseSkipped(f"a cluster of {P} CTAs cannot be resident here")
        barrier.launch(P, 256, out, 2, 8, cluster=P, smem=128)
    torch.cuda.synchronize()


def _probe_stream_read() -> None:
    import torch

    host = torch.ones((1 << 20) // 4, dtype=torch.float32).pin_memory()
    sink = torch.zeros(4, dtype=torch.int64, device="cuda")
    _probe_kernel("stream_read", ("ptr", "u64", "ptr")).launch(4, 256, host, host.numel() // 4 - 3, sink)
    torch.cuda.synchronize()


def _probe_spin() -> None:
    import torch

    out = torch.zeros(2, dtype=torch.int64, device="cuda")
    _probe_kernel("spin", ("ptr", "u64")).launch(2, 32, out, 2000)
    torch.cuda.synchronize()


def probe_hw_cases(tool: str, with_triton: bool) -> list[Case]:
    cases = [Case("smem_chase", f"{'remote' if r else 'local'} 64 steps",
                  functools.partial(_probe_dsmem, "chase", r)) for r in (0, 1)]
    modes = ("local_read", "remote_read", "local_store", "remote_store")
    cases += [Case("smem_rate", f"{mode} 32 iters", functools.partial(_probe_dsmem, "rate", i))
              for i, mode in enumerate(modes)]
    cases += [Case("cluster_barrier", f"P={P}", functools.partial(_probe_dsmem, "barrier", 0, P))
              for P in (2, 4, 8, 16)]
    cases.append(Case("stream_read", "1 MiB pinned, 4 CTAs, a tail of 3 words", _probe_stream_read))
    cases.append(Case("spin", "2000 cycles", _probe_spin))
    return cases


def _congestion(host_load: int) -> None:
    from smemkit.offload.congestion import CongestionProbe

    probe = CongestionProbe(host_mib=1, hbm_mib=4, host_load=host_load)
    try:
        probe.run(2, 8192, grid=4, host_bytes=1 << 18)  # host and HBM CTAs together
        probe.run(0, 4096, grid=4, host_bytes=0, hbm_min_iters=2)  # HBM CTAs alone
        probe.run(3, 16384, grid=3, host_bytes=(1 << 18) + 4096)  # host CTAs alone
    finally:
        probe.free()


def congestion_cases(tool: str, with_triton: bool) -> list[Case]:
    return [Case(f"congestion_probe HOST_LOAD={h}", "grid 3-4, 256 KiB pinned, 4 MiB HBM",
                 functools.partial(_congestion, h)) for h in (0, 1, 2)]


@functools.cache
def _host_path_probe():
    from smemkit.offload.host_paths import HostPathProbe

    return HostPathProbe(host_mib=4)


def _host_path(kind: str, *args: int, **kwargs: int) -> None:
    probe = _host_path_probe()
    point = probe.bulk(*args, **kwargs) if kind == "bulk" else probe.tma(*args, **kwargs)
    if not point.data_ok:
        raise AssertionError(f"{kind}{args}{kwargs}: the landed bytes differ from the source")


def host_paths_cases(tool: str, with_triton: bool) -> list[Case]:
    band = 4096 * 2  # bytes of one row of the probe's 4096-column bf16 tiles
    specs = [("bulk", (1, 4096, 1), {"nbytes": 1 << 16}),
             ("bulk", (3, 16384, 4), {"nbytes": 1 << 18}),
             ("bulk", (7, 1040, 3), {"nbytes": 1040 * 21}),
             ("tma", (1, 64, 2), {"nbytes": 64 * band}),
             ("tma", (4, 128, 3), {"P": 2, "nbytes": 128 * band}),
             ("tma", (8, 256, 2), {"P": 4, "nbytes": 256 * band}),
             ("tma", (4, 32, 2), {"tile_cols": 256, "nbytes": 32 * band})]
    return [Case(f"host_{kind}_probe", f"ctas, size, stages = {args} {kwargs}",
                 functools.partial(_host_path, kind, *args, **kwargs)) for kind, args, kwargs in specs]


# ---------------------------------------------------------------- atomics
@functools.cache
def _sweep(name: str):
    import torch

    from smemkit.atomics.kernels import AtomSweep, Variant

    return AtomSweep(Variant.parse(name), torch.cuda.get_device_properties(0).multi_processor_count)


def _atom(name: str, pattern: str, scope: str) -> None:
    import torch

    from smemkit.atomics.kernels import PATTERNS

    _sweep(name).launcher(PATTERNS[pattern], 4, iters=64, scope=scope)()
    torch.cuda.synchronize()


def atomic_variant_names() -> list[str]:
    """Every operation, returning and not, on its first type, plus one 64-bit type where it has
    one: each kind of module the microbenchmarks compile, without all of their type pairs."""
    from smemkit.atomics.kernels import DTYPE_BYTES, OPS, SUPPORTED

    names = []
    for op in OPS:
        first = SUPPORTED[op][0]
        names += [f"{op}.{first}.noret", f"{op}.{first}.ret"]
        wide = [d for d in SUPPORTED[op] if DTYPE_BYTES[d] == 8 and d != first]
        names += [f"{op}.{wide[0]}.ret"] if wide else []
    return names


def atomics_micro_cases(tool: str, with_triton: bool) -> list[Case]:
    from smemkit.atomics.kernels import TABLE_PATTERNS

    patterns = ("same", "conflict4") if tool in SLOW_TOOLS else TABLE_PATTERNS
    cases = [Case(f"atom {name}", f"{pattern} 4 warps/SM 64 iters",
                  functools.partial(_atom, name, pattern, "private"))
             for name in atomic_variant_names() for pattern in patterns]
    cases.append(Case("atom add.int32.noret", "distinct_banks shared scope",
                      functools.partial(_atom, "add.int32.noret", "distinct_banks", "shared")))
    return cases


@functools.cache
def _histogram():
    from smemkit.atomics.kernels import Histogram

    return Histogram()


def _hist(name: str, key_bytes: int, nbins: int, passes: int) -> None:
    import torch

    n = (1 << 14) + 13  # an odd count: the kernels' one-key tail
    g = torch.Generator(device="cuda").manual_seed(key_bytes * 1000 + nbins)
    keys = torch.randint(0, 2 ** 31 - 1, (n,), device="cuda", generator=g)
    keys = keys.to(torch.int32) if key_bytes == 4 else (keys & 255).to(torch.uint8)
    out = torch.zeros(nbins, dtype=torch.int32, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    _histogram().launcher(name, keys, out, nbins, sm_count=sms, passes=passes)()
    want = torch.bincount(keys.to(torch.int64) & (nbins - 1), minlength=nbins) * passes
    if not torch.equal(out.to(torch.int64), want):
        raise AssertionError(f"{name}: the histogram differs from torch.bincount")


def histogram_cases(tool: str, with_triton: bool) -> list[Case]:
    from smemkit.atomics.kernels import HIST_KERNELS

    configs = [(4, 256, 1), (1, 256, 1)] + ([] if tool in SLOW_TOOLS else [(1, 64, 3)])
    return [Case(name, f"{8 * kb}-bit keys, {nbins} bins, {passes} pass(es), n=2^14+13",
                 functools.partial(_hist, name, kb, nbins, passes))
            for name in HIST_KERNELS for kb, nbins, passes in configs]


# ---------------------------------------------------------------- tiling
def _tiling_kernel(name: str) -> None:
    import torch

    module, kernels = _tiling_suite()
    params = ("ptr", "ptr", "ptr")
    if name == "baseline":
        from smemkit.tiling.microkernel import BASELINE_BLOCK, BASELINE_KERNEL

        out = torch.zeros(BASELINE_BLOCK[0] + 1, dtype=torch.int32, device="cuda")
        trace = torch.zeros(BASELINE_BLOCK[0], dtype=torch.int32, device="cuda")
        module.function(BASELINE_KERNEL, params).launch(1, BASELINE_BLOCK, out, trace, 0, smem=128)
    else:
        k = kernels[name]
        out = torch.zeros(k.threads + 1, dtype=torch.int32, device="cuda")
        trace = torch.full((len(k.slots) * k.threads,), -9, dtype=torch.int32, device="cuda")
        table = (torch.tensor(k.address_table, dtype=torch.int32, device="cuda")
                 if k.mode == "table" else 0)
        module.function(k.name, params).launch(1, k.block, out, trace, table, smem=k.smem_bytes)
    torch.cuda.synchronize()


@functools.cache
def _tiling_suite():
    from smemkit.runtime.launch import KernelModule
    from smemkit.tiling.microkernel import suite_source
    from smemkit.tiling.validation_suite import suite_kernels

    kernels = [k for _, k in suite_kernels()]
    return KernelModule(suite_source(kernels), "tiling_validate_suite"), {k.name: k for k in kernels}


def tiling_cases(tool: str, with_triton: bool) -> list[Case]:
    from smemkit.tiling.validation_suite import suite_kernels

    cases = [Case("baseline", "one block", functools.partial(_tiling_kernel, "baseline"))]
    cases += [Case(k.name, f"one block {k.block}", functools.partial(_tiling_kernel, k.name))
              for _, k in suite_kernels()]
    return cases


# ---------------------------------------------------------------- racecheck controls
CONTROLS = {
    "ring_cp_async_mbarrier": "cp.async + cp.async.mbarrier.arrive.noinc, then parity waits "
                              "(split_gemv.cu's hand-over): correctly ordered",
    "ring_st_shared_mbarrier": "st.shared + mbarrier.arrive.release, then parity waits: correctly ordered",
    "ring_cp_async_syncthreads": "cp.async.wait_all + __syncthreads: correctly ordered",
    "ring_unsynchronised": "st.shared then another warp's ld.shared with no order: a real race",
}
CONTROL_STAGES = 6


@functools.cache
def _controls_module():
    from smemkit.runtime.launch import KernelModule

    return KernelModule((HERE / "racecheck_controls.cu").read_text(), "racecheck_controls")


def _control(name: str) -> None:
    import torch

    src = torch.randint(0, 1 << 20, (CONTROL_STAGES, 256, 4), dtype=torch.int32, device="cuda")
    out = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    _controls_module().function(name, ("ptr", "ptr", "i32")).launch(1, 256, src, out, CONTROL_STAGES)
    torch.cuda.synchronize()
    if name != "ring_unsynchronised":  # the racy one may read either stage; the others must not
        want = src[:, :, 0].roll(-96, dims=1).sum(0, dtype=torch.int64).to(torch.int32)
        if not torch.equal(out, want):
            raise AssertionError(f"{name}: a reader saw the wrong stage")


def _control_group(name: str) -> Group:
    return Group("benchmarks/racecheck_controls.cu (calibration, not shipped)",
                 lambda tool, triton: [Case(name, f"1 CTA, {CONTROL_STAGES} stages, 2 slots",
                                            functools.partial(_control, name))],
                 racecheck_note=CONTROLS[name], tools=("racecheck",))


def _reduction_group(workload: str) -> Group:
    return Group(f"reduction codegen ({workload})",
                 lambda tool, triton: reduction_cases(workload, tool, triton))


def groups() -> dict[str, Group]:
    from smemkit.reduction.workloads import BUILTIN

    found = {f"reduction.{w}": _reduction_group(w) for w in sorted(BUILTIN)}
    found.update({
        "offload.split_gemv": Group("offload/split_gemv.cu", split_gemv_cases),
        "offload.split_attention": Group("offload/split_attention.cu", attention_cases),
        "offload.moe_gemv": Group("offload/moe_gemv.cu", moe_cases),
        "offload.direct_gemm": Group("offload/direct_gemm.cu (+ cuBLAS for the HBM rows)",
                                     direct_gemm_cases),
        "offload.ring": Group("ring path: cuBLAS GEMMs and copy-engine copies", ring_cases),
        "probe.hw": Group("hw/probe_kernels.cu", probe_hw_cases),
        "probe.congestion": Group("offload/congestion.cu", congestion_cases),
        "probe.host_paths": Group("offload/host_paths.cu", host_paths_cases),
        "atomics.micro": Group("atomics/kernels.cu (microbenchmarks)", atomics_micro_cases),
        "atomics.histograms": Group("atomics/kernels.cu (histograms)", histogram_cases),
        "tiling.micro": Group(
            "tiling validation suite (tiling/microkernel.py)", tiling_cases,
            racecheck_note="each microkernel issues one unsynchronised shared-memory access pattern "
                           "of one block by design (stores of several threads to one address are "
                           "among the patterns measured), so racecheck hazards here can be the "
                           "pattern itself rather than a bug"),
    })
    found.update({f"control.{name}": _control_group(name) for name in CONTROLS})
    return found


# ---------------------------------------------------------------- child
def run_child(group: str, tool: str, with_triton: bool, out_path: Path) -> int:
    """Run every case of ``group`` once; write {ran, skipped, failed} to ``out_path``."""
    import torch

    report: dict = {"group": group, "tool": tool, "ran": [], "skipped": {}, "failed": {}}
    if not torch.cuda.is_available():
        report["failed"][group] = "no CUDA GPU is visible to this process"
        out_path.write_text(json.dumps(report, indent=1))
        return 1
    torch.cuda.init()
    for case in groups()[group].cases(tool, with_triton):
        try:
            case.run()
            torch.cuda.synchronize()
            report["ran"].append(case.label)
        except (CaseSkipped, UnsupportedDeviceError) as exc:
            report["skipped"][case.label] = str(exc)[:300]
        except Exception as exc:  # recorded and the next case runs: the tool's report says more
            report["failed"][case.label] = f"{type(exc).__name__}: {str(exc)[:500]}"
        out_path.write_text(json.dumps(report, indent=1))  # what ran so far, should the process die
    return 1 if report["failed"] else 0


# ---------------------------------------------------------------- summary parsing
_ERROR_SUMMARY = re.compile(r"^=+ ERROR SUMMARY: (\d+) errors?", re.MULTILINE)
_RACE_SUMMARY = re.compile(
    r"^=+ RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", re.MULTILINE)
_LEAK_SUMMARY = re.compile(r"^=+ LEAK SUMMARY: (\d+) bytes leaked in (\d+) allocations?", re.MULTILINE)
_BOILERPLATE = re.compile(r"^=+\s*(COMPUTE-SANITIZER\s*|(ERROR|RACECHECK|LEAK) SUMMARY:.*)?$")


def parse_summary(text: str) -> dict:
    """The counts in a compute-sanitizer transcript. ``errors`` sums every "ERROR SUMMARY" line
    (one per process the tool followed); without one it is racecheck's errors + warnings, and
    None when the transcript holds no summary at all (the tool or the child died first)."""
    error_counts = [int(m) for m in _ERROR_SUMMARY.findall(text)]
    races = [tuple(map(int, m)) for m in _RACE_SUMMARY.findall(text)]
    leaks = [tuple(map(int, m)) for m in _LEAK_SUMMARY.findall(text)]
    result: dict = {"errors": sum(error_counts) if error_counts else None,
                    "summaries": len(error_counts) + len(races)}
    if races:
        result["racecheck"] = {"hazards": sum(r[0] for r in races), "errors": sum(r[1] for r in races),
                               "warnings": sum(r[2] for r in races)}
        if result["errors"] is None:
            result["errors"] = result["racecheck"]["errors"] + result["racecheck"]["warnings"]
    if leaks:
        result["leaked_bytes"] = sum(leak[0] for leak in leaks)
    return result


def report_excerpt(text: str, limit: int = 40) -> list[str]:
    """The tool's own report lines (those it prefixes with '=' signs), boilerplate left out."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.startswith("=====")]
    return [ln for ln in lines if not _BOILERPLATE.match(ln)][:limit]


# ---------------------------------------------------------------- parent
def find_sanitizer() -> tuple[str | None, list[str]]:
    """compute-sanitizer's path (or None) and every place looked at."""
    looked = ["PATH", "$CUDA_HOME/bin, $CUDA_PATH/bin, nvcc's toolkit/bin, /usr/local/cuda/bin",
              "nvidia/cu13/bin in sys.path (pip nvidia-cuda-sanitizer-api)"]
    exe = find_tool("compute-sanitizer")
    if exe:
        return exe, looked
    patterns = [str(Path(root) / "compute-sanitizer" / "compute-sanitizer")
                for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
                if root]
    patterns += [str(Path(base) / "nvidia" / "*" / "compute-sanitizer" / "compute-sanitizer")
                 for base in sys.path if base]
    looked += ["<toolkit>/compute-sanitizer/compute-sanitizer",
               "nvidia/*/compute-sanitizer/compute-sanitizer in sys.path"]
    for pattern in patterns:
        for hit in sorted(glob.glob(pattern)):
            if os.access(hit, os.X_OK):
                return hit, looked
    return None, looked


def sanitizer_version(exe: str) -> str | None:
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else None


def child_args(group: str, tool: str, with_triton: bool, child_out: Path) -> list[str]:
    return [sys.executable, str(SCRIPT), "--child", group, "--for-tool", tool, "--child-out",
            str(child_out), *(["--triton"] if with_triton else [])]


def sanitizer_command(exe: str, tool: str, child: list[str]) -> list[str]:
    return [exe, "--tool", tool, *SANITIZER_FLAGS, *child]


def run_logged(cmd: list[str], log: Path, timeout: float) -> tuple[int | None, float]:
    """Run ``cmd`` as a new process group with output to ``log``; on timeout kill the whole group."""
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    return code, time.perf_counter() - start


def _cases_report(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"ran": 0, "skipped": {}, "failed": {}, "report": "the child wrote no case report"}
    return {"ran": len(data["ran"]), "skipped": data["skipped"], "failed": data["failed"]}


def one_run(job: tuple[str, str | None], exe: str | None, with_triton: bool, workdir: Path,
            timeout: float, deadline: float) -> dict:
    """One child: plain (tool None) or under ``tool``, stopped at ``timeout`` seconds or at the
    ``deadline`` (a time.perf_counter() value), whichever comes first; returns its record."""
    group, tool = job
    stem = f"{group}.{tool or 'plain'}"
    timeout = min(timeout, deadline - time.perf_counter())
    if timeout < MIN_CHILD_S:
        return {"group": group, "tool": tool, "exit_code": None, "timed_out": False, "wall_s": 0.0,
                "command": None, "errors": None, "clean": False,
                "cases": {"ran": 0, "skipped": {}, "failed": {}},
                "not_run": "the run's --deadline left too little time to start it"}
    child = child_args(group, tool or "memcheck", with_triton, workdir / f"{stem}.json")
    cmd = child if tool is None else sanitizer_command(exe or "compute-sanitizer", tool, child)
    code, wall = run_logged(cmd, workdir / f"{stem}.log", timeout)
    text = (workdir / f"{stem}.log").read_text(errors="replace")
    record: dict = {"group": group, "tool": tool, "exit_code": code, "timed_out": code is None,
                    "wall_s": round(wall, 2), "command": " ".join(cmd),
                    "cases": _cases_report(workdir / f"{stem}.json")}
    if tool is None:
        record["clean"] = code == 0
        if code != 0:
            record["output_tail"] = text.splitlines()[-30:]
        return record
    record.update(parse_summary(text))
    record["clean"] = code == 0 and record["errors"] == 0 and not record["cases"]["failed"]
    if not record["clean"]:
        record["report_excerpt"] = report_excerpt(text) or text.splitlines()[-30:]
    return record


def provenance(argv: list[str], exe: str | None) -> dict:
    """The shared provenance block (smemkit.hw.environment) plus the sanitizer's path, version
    and flags."""
    from smemkit.hw.environment import device_block
    from smemkit.hw.environment import provenance as shared_provenance

    device = device_block()
    return {**shared_provenance(device, ["benchmarks/sanitizer.py", *argv]), "device": device,
            "sanitizer": {"path": exe, "version": sanitizer_version(exe) if exe else None,
                          "flags": list(SANITIZER_FLAGS)}}


def select(names: list[str], pattern: str | None) -> list[str]:
    if not pattern:
        return names
    rx = re.compile(pattern)
    return [n for n in names if rx.search(n)]


def run_parent(args: argparse.Namespace, argv: list[str]) -> int:
    exe, looked = find_sanitizer()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if exe is None:
        refusal = (f"compute-sanitizer was not found (looked at: {'; '.join(looked)}); install it: "
                   f"{INSTALL_HINT}")
        out.write_text(json.dumps({"provenance": provenance(argv, None), "refused": refusal,
                                   "records": []}, indent=1) + "\n")
        print(f"sanitizer: {refusal}", file=sys.stderr)
        return 2
    all_groups = groups()
    names = select(list(all_groups), args.groups)
    tools = [t for t in TOOLS if t in args.tools.split(",")]
    workdir = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="smemkit-sanitizer-"))
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    deadline = start + args.deadline

    def pool_run(jobs: list[tuple[str, str | None]]) -> list[dict]:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            return list(pool.map(
                lambda j: one_run(j, exe, args.triton, workdir, args.timeout, deadline), jobs))

    plain = pool_run([(g, None) for g in names])  # fills the kernel cache; failures alone
    # the slow tools on the largest groups first, so the pool does not end on one long run
    jobs = sorted(((g, t) for g in names for t in tools if t in all_groups[g].tools),
                  key=lambda j: (j[1] not in SLOW_TOOLS, not j[0].startswith("reduction"), j))
    records = pool_run(jobs)
    plain_clean = {p["group"]: p["clean"] for p in plain}
    for r in records:
        r["plain_clean"] = plain_clean[r["group"]]
        r["sources"] = all_groups[r["group"]].sources
        r["variants"] = sorted({c.variant for c in all_groups[r["group"]].cases(r["tool"], args.triton)})
        note = all_groups[r["group"]].racecheck_note
        if note and r["tool"] == "racecheck":
            r["note"] = note
    # the calibration kernels are read apart: one of them races on purpose
    controls = {r["group"]: r["errors"] for r in records if r["group"].startswith("control.")}
    shipped = [r for r in records if not r["group"].startswith("control.")]
    summary = {"runs": len(shipped), "clean": sum(r["clean"] for r in shipped),
               "with_errors": sum(bool(r["errors"]) for r in shipped),
               "no_summary": sum(r["errors"] is None and "not_run" not in r for r in shipped),
               "not_run": sum("not_run" in r for r in shipped),
               "failed_cases": sum(len(r["cases"]["failed"]) for r in records),
               "plain_failures": [p["group"] for p in plain if not p["clean"]],
               "racecheck_controls": controls,
               "wall_s": round(time.perf_counter() - start, 1),
               "excluded": ("Triton reduction kernels: Triton generates them, not smemkit's CUDA "
                            "sources (run with --triton to include them)") if not args.triton else None}
    out.write_text(json.dumps({"provenance": provenance(argv, exe), "summary": summary,
                               "plain": plain, "records": records}, indent=1) + "\n")
    for r in records:
        mark = "clean" if r["clean"] else f"errors={r['errors']} exit={r['exit_code']}"
        print(f"{r['tool']:10s} {r['group']:28s} {r['wall_s']:7.1f} s  {mark}")
    print(f"{summary['clean']}/{summary['runs']} clean in {summary['wall_s']} s -> {out} "
          f"(logs in {workdir})")
    return 0 if summary["clean"] == summary["runs"] and not summary["plain_failures"] else 1


def list_groups(with_triton: bool) -> int:
    """Groups, their sources and, per tool, the variants and shapes each child runs (no GPU)."""
    for name, group in groups().items():
        print(f"{name}  ({group.sources})")
        for tool in group.tools:
            cases = group.cases(tool, with_triton)
            variants = list(dict.fromkeys(c.variant for c in cases))
            shapes = list(dict.fromkeys(c.shape for c in cases))
            print(f"  {tool:9s} {len(cases):3d} cases; variants: {', '.join(variants)}")
            print(f"  {'':9s} shapes: {'; '.join(shapes)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_OUT), help="the results JSON (default: %(default)s)")
    p.add_argument("--list", action="store_true", help="print the groups and variants; no GPU needed")
    p.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of %(default)s")
    p.add_argument("--groups", help="regular expression selecting groups by name")
    p.add_argument("--jobs", type=int, default=6, help="children run at once (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per child (default: %(default)s)")
    p.add_argument("--deadline", type=float, default=330.0,
                   help="seconds for the whole run: children not started by then are recorded as "
                        "not run, running ones are stopped (default: %(default)s)")
    p.add_argument("--logs", help="keep each child's transcript in this folder (default: a temp folder)")
    p.add_argument("--triton", action="store_true", help="include the Triton reduction kernels")
    p.add_argument("--child", metavar="GROUP", help=argparse.SUPPRESS)
    p.add_argument("--for-tool", default="memcheck", choices=TOOLS, help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.list:
        return list_groups(args.triton)
    if args.child:
        if args.child not in groups() or not args.child_out:
            p.error(f"--child takes one of {', '.join(groups())} and needs --child-out")
        return run_child(args.child, args.for_tool, args.triton, Path(args.child_out))
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    return run_parent(args, argv)


if __name__ == "__main__":
    sys.exit(main())
