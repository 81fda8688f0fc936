"""Shared-memory atomics on the current GPU: service table, SASS check, held-out validation and the
histogram case study (SPEC §3, issue 6). One command:

    python benchmarks/atomics.py                       # on the H200 -> benchmarks/results/h200/atomics.json
    python benchmarks/atomics.py --ncu                 # + the histogram kernels under Nsight Compute
    python benchmarks/atomics.py --dry-run --out X.json  # no GPU: compile + SASS + the pipeline on a
                                                        # made-up table (nothing in it is measured)

Steps:
1. compile every microbenchmark variant (op x dtype x returning) and the histogram kernels for
   the GPU's architecture (sm_90a in --dry-run); record registers and spills;
2. SASS: cuobjdump each module and classify every ATOMS as native or CAS retry loop;
3. service table: per variant, pattern (the table patterns) and n (1..64 warps per SM), S(n) =
   1 / (median over SMs of warp instructions per cycle), from clock64 per warp; a CUDA-event
   timing of one configuration per variant cross-checks cycles against wall time;
4. validation on configurations the table does not contain: warp counts off the grid, held-out
   address patterns, think times (the closed queue) and CAS fractions (mix): each record has
   config, predicted and measured throughput (warp instructions per SM cycle), and the summary
   the median and max relative error against the issue's 10 % / 25 % limits;
5. histograms: five kernels (the pair hist_inc / hist_add, one token apart; hist_private,
   hist_aggregate; the model-guided hist_lane) x uniform / skewed / single-bin keys x three
   regimes (HIST_REGIMES: 2^26 uint32 keys from DRAM; 2^24 uint8 keys from L2 with 256 and with
   64 bins), checked against torch.bincount, timed with CUDA events around CUDA-graph replays
   (median of --reps, no L2 flush); per kernel the model's prediction before timing (per-SM
   atomic cycles vs the key stream) and its U from the data (X from time and instruction counts,
   wavefronts from the keys); per regime and input the case-study summary (pair ratio, the fixed
   kernel's speedups); with --ncu, every launch profiled by `ncu` (--cache-control none) and
   analyzed from counters (U per SM and verdict).

In --dry-run the "measurements" come from the placeholder model itself (so the pipeline and the
JSON are exercised without a GPU); the file says so in "status".
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from smemkit.atomics.analysis import analyze, analyze_record
from smemkit.atomics.kernels import (
    HELD_OUT_PATTERNS,
    HIST_ENTRIES,
    HIST_KERNELS,
    LANE_KERNELS,
    PATTERNS,
    TABLE_PATTERNS,
    AtomSweep,
    Histogram,
    Variant,
    all_variants,
    compile_histograms,
    hist_entry,
    nominal_wavefronts,
)
from smemkit.atomics.model import (
    ATOMIC_BOUND_U,
    closed_queue,
    error_summary,
    relative_error,
    serial_throughput,
)
from smemkit.atomics.sass import classify_cubin
from smemkit.atomics.table import N_GRID, ServiceCurve, ServiceTable, placeholder_table
from smemkit.errors import ToolNotFoundError
from smemkit.hw import ncu
from smemkit.hw.environment import device_block, provenance
from smemkit.runtime.paths import find_tool

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "h200" / "atomics.json"
CORE = ("add.int32.noret", "inc.int32.noret", "add.int32.ret", "add.float32.noret", "cas.int32.ret",
        "cas.int32.noret", "exch.int32.noret", "max.int32.noret", "mix.int32.noret")
QUICK_GRID = (1, 4, 16, 32, 64)
HELD_OUT_N = (3, 5, 7, 20, 44, 56)  # none on N_GRID
NCU_TIMEOUT_S = 400  # the histogram profile; the device allows 10 minutes per command
THINKS = (4, 16, 64)
HIST_N = 1 << 26  # DRAM regime: 256 MB of uint32 keys
HIST_L2_N = 1 << 24  # L2 regimes: 16 MB of uint8 keys (H200 L2: 60 MB, two partitions)
HIST_L2_PASSES = 8  # ... counted 8 times per launch (2^27 atomics: fixed costs stay small)
HIST_DRY_N = 1 << 16
HIST_NBINS = 256
HIST_INPUTS = ("uniform", "skewed", "single")


def log(msg: str) -> None:
    print(f"[atomics {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- measuring: the GPU and a stand-in for --dry-run -------------------------------------------


class GpuRunner:
    """Measures on the current GPU (AtomSweep launches; per-SM clock64 throughput)."""

    kind = "gpu"

    def __init__(self, iters: int) -> None:
        self.sm_count = torch.cuda.get_device_properties(0).multi_processor_count
        self.iters = iters
        self._sweeps: dict[str, AtomSweep] = {}

    def sweep(self, variant: str) -> AtomSweep:
        if variant not in self._sweeps:
            self._sweeps[variant] = AtomSweep(Variant.parse(variant), self.sm_count)
        return self._sweeps[variant]

    def throughput(self, variant: str, pattern: str, n: int, *, scope: str = "private", think: int = 0,
                   cas_per8: int = 0) -> dict:
        return self.sweep(variant).run(PATTERNS[pattern], n, iters=self.iters, scope=scope, think=think,
                                       cas_per8=cas_per8)

    def think_cycles(self, variant: str, n: int, think: int) -> float:
        """Z: cycles per loop iteration of one warp with the atomic switched off."""
        r = self.sweep(variant).run(PATTERNS["distinct_banks"], n, iters=self.iters, think=think,
                                    do_atomic=False)
        return n / r["per_cycle_median"]  # per-SM iterations per cycle / n warps -> per-warp period

    def event_ms(self, variant: str, pattern: str, n: int, reps: int) -> float:
        from smemkit.runtime.timing import time_gpu

        return time_gpu(self.sweep(variant).launcher(PATTERNS[pattern], n, iters=self.iters),
                        warmup=3, reps=reps).median_ms


class ModelRunner:
    """--dry-run: answers from a (placeholder) table through the same model the predictions use.

    Adds a fixed, deterministic 3 % skew so error statistics are not trivially zero. Nothing this
    produces is a measurement.
    """

    kind = "placeholder-model (dry run, not measured)"

    def __init__(self, table: ServiceTable, sm_count: int = 132) -> None:
        self.table = table
        self.sm_count = sm_count

    def throughput(self, variant: str, pattern: str, n: int, *, scope: str = "private", think: int = 0,
                   cas_per8: int = 0) -> dict:
        s = mix_service(self.table, variant, pattern, cas_per8, scope)
        z = think * 5.0
        x = closed_queue(lambda j: s(j), n, z).throughput * (1.03 if n % 2 else 0.97)
        return {"per_cycle_median": x, "per_cycle_min": x, "per_cycle_max": x, "sms": self.sm_count,
                "sms_other": 0, "layout": "model", "ctas_per_sm": None, "warps_per_cta": None}

    def think_cycles(self, variant: str, n: int, think: int) -> float:
        return think * 5.0

    def event_ms(self, variant: str, pattern: str, n: int, reps: int) -> float:
        return float("nan")


def mix_service(table: ServiceTable, variant: str, pattern: str, cas_per8: int, scope: str):
    """S(j) for a variant; for mix.* the CAS share c = cas_per8 / 8 adds: (1-c) S_add + c S_cas."""
    v = Variant.parse(variant)
    if v.op != "mix":
        return lambda j: table.service_estimate(variant, pattern, j, scope)
    ret = "ret" if v.returning else "noret"
    add, cas = f"add.{v.dtype}.{ret}", f"cas.{v.dtype}.{ret}"
    c = cas_per8 / 8
    return lambda j: ((1 - c) * table.service_estimate(add, pattern, j, scope)
                      + c * table.service_estimate(cas, pattern, j, scope))


# ---- steps ------------------------------------------------------------------------------------


def compile_all(variants: list[Variant], arch: str) -> dict:
    out = {}
    for v in variants:
        m = v.compile(arch)
        out[v.name] = {"registers": max(u.registers for u in m.resources.values()),
                       "spills": any(u.spills for u in m.resources.values()), "kernels": len(m.resources)}
    h = compile_histograms(arch)
    out["histograms"] = {k: {"registers": u.registers, "spills": u.spills} for k, u in h.resources.items()}
    return out


def sass_check(variants: list[Variant], arch: str) -> dict:
    if find_tool("cuobjdump") is None:
        return {"status": "skipped: cuobjdump not found"}
    result = {"status": "ok", "arch": arch, "variants": {}}
    for v in variants:
        verdicts = classify_cubin(v.compile(arch).cubin)
        kinds = {k.kind for k in verdicts.values() if k.kind != "none"}
        opcodes = sorted({o for k in verdicts.values() for o in k.opcodes})
        result["variants"][v.name] = {"kind": kinds.pop() if len(kinds) == 1 else "mixed",
                                      "opcodes": opcodes}
    hist = classify_cubin(compile_histograms(arch).cubin)
    result["histograms"] = {k: hist[k].to_dict() for k in HIST_ENTRIES if k in hist}
    return result


def build_table(runner, variants: list[str], grid: tuple[int, ...], shared_variants: list[str],
                sass: dict, gpu: str, sm_count: int, clock_mhz: float | None) -> ServiceTable:
    table = ServiceTable(gpu, "measured" if runner.kind == "gpu" else "placeholder", sm_count=sm_count,
                         sm_clock_mhz=clock_mhz,
                         notes="S(n) = 1 / median per-SM warp instructions per cycle (clock64); "
                               "wavefronts are the bank-rule (nominal) counts")
    for name in variants:
        v = Variant.parse(name)
        kind = sass.get("variants", {}).get(name, {}).get("kind")
        for scope in ("private", "shared") if name in shared_variants else ("private",):
            for pattern in TABLE_PATTERNS:
                cycles = []
                for n in grid:
                    r = runner.throughput(name, pattern, n, scope=scope)
                    cycles.append(1.0 / r["per_cycle_median"])
                w = float(nominal_wavefronts(PATTERNS[pattern], v.dtype))
                table.add(ServiceCurve(name, pattern, scope, w, tuple(grid), tuple(cycles), kind))
        log(f"table: {name} done")
    return table




def validation(runner, table: ServiceTable, variants: list[str]) -> dict:
    """Held-out configurations: predicted (table + model) vs measured throughput.

    Each record carries ``predicted_utilization`` = predicted X times the unit's saturated
    service time for that pattern (S at 64 warps); the issue's limits apply to the atomic-bound
    records (U >= ATOMIC_BOUND_U), and the summary over all records is reported beside them.
    """
    records = []

    def record(kind: str, config: dict, predicted: float, measured: dict, s_unit: float, **extra) -> None:
        m = measured["per_cycle_median"]
        u = predicted * s_unit
        records.append({"kind": kind, "config": config, "predicted": predicted, "measured": m,
                        "error": relative_error(predicted, m), "sms": measured.get("sms"),
                        "predicted_utilization": u, "atomic_bound": u >= ATOMIC_BOUND_U, **extra})

    def saturated(v: str, pattern: str) -> float:
        return table.service_estimate(v, pattern, 64)

    core = [v for v in ("add.int32.noret", "inc.int32.noret", "cas.int32.ret", "add.float32.noret")
            if v in variants]
    for v in core:  # warp counts between the grid points, table patterns
        for pattern in ("distinct_banks", "conflict4", "same"):
            for n in HELD_OUT_N:
                pred = 1.0 / table.service_estimate(v, pattern, n)
                record("n_off_grid", {"variant": v, "pattern": pattern, "n": n},
                       pred, runner.throughput(v, pattern, n), saturated(v, pattern))
        for pattern in HELD_OUT_PATTERNS:  # address patterns the table never saw
            for n in (8, 32):
                pred = 1.0 / table.service_estimate(v, pattern, n)
                record("pattern_held_out", {"variant": v, "pattern": pattern, "n": n},
                       pred, runner.throughput(v, pattern, n), saturated(v, pattern))
        for n in (8, 16, 32, 64):  # think time
            for think in THINKS:
                z = runner.think_cycles(v, n, think)
                s_n = table.service_estimate(v, "distinct_banks", n)
                q = closed_queue(lambda j, v=v: table.service_estimate(v, "distinct_banks", j), n, z)
                record("think", {"variant": v, "pattern": "distinct_banks", "n": n, "think_iters": think,
                                 "z_cycles": z},
                       serial_throughput(s_n, z / n), runner.throughput(v, "distinct_banks", n, think=think),
                       saturated(v, "distinct_banks"), queue_predicted=q.throughput,
                       queue_response=q.response, queue_utilization=q.utilization)
    if "mix.int32.noret" in variants and {"add.int32.noret", "cas.int32.noret"} <= set(table.variants()):
        # CAS share c on patterns where the unit, not the loop's issue or latency, is the limit
        for pattern in ("conflict4", "same"):
            for cas_per8 in (1, 2, 4, 6):
                for n in (16, 32):
                    s = mix_service(table, "mix.int32.noret", pattern, cas_per8, "private")
                    record("cas_fraction", {"variant": "mix.int32.noret", "pattern": pattern, "n": n,
                                            "c": cas_per8 / 8}, 1.0 / s(n),
                           runner.throughput("mix.int32.noret", pattern, n, cas_per8=cas_per8), s(64))
    bound = [r for r in records if r["atomic_bound"]]
    summary = error_summary((r["predicted"], r["measured"]) for r in bound)
    summary["scope"] = f"atomic-bound records (predicted U >= {ATOMIC_BOUND_U})"
    summary_all = error_summary((r["predicted"], r["measured"]) for r in records)
    by_kind = {k: error_summary((r["predicted"], r["measured"]) for r in records if r["kind"] == k)
               for k in sorted({r["kind"] for r in records})}
    return {"unit": "warp instructions per SM cycle", "records": records, "summary": summary,
            "summary_all": summary_all, "by_kind": by_kind}


# ---- histograms ------------------------------------------------------------------------------


class HistRegime(NamedTuple):
    """One setting of the histogram case study: how many keys, how wide, how many bins, and
    whether the keys are meant to come from L2 (no flush, warm-up launches first) or from DRAM."""

    name: str
    n_keys: int
    key_bytes: int
    nbins: int
    passes: int  # times one launch counts the keys (HIST_L2_PASSES for the L2 regimes)
    l2_resident: bool
    assumed_tbps: float  # key bandwidth the prediction assumes (DRAM: measured here; L2: NOT measured)
    why: str

    def to_dict(self) -> dict:
        return {"name": self.name, "n_keys": self.n_keys, "key_bytes": self.key_bytes, "nbins": self.nbins,
                "passes": self.passes, "key_mbytes": self.n_keys * self.key_bytes / 2**20,
                "l2_resident": self.l2_resident,
                "assumed_key_tbps": self.assumed_tbps, "why": self.why}


# The DRAM regime is the first H200 run's; the L2 regimes put the atomics, not the key stream, on
# the critical path (the arithmetic is in docs/atomics.md, "Histogram case study: design").
HIST_REGIMES = (
    HistRegime("dram", HIST_N, 4, HIST_NBINS, 1, False, 3.6,
               "2^26 uint32 keys (256 MB) from DRAM: the key stream bounds every kernel (measured)"),
    HistRegime("l2_u8_256", HIST_L2_N, 1, 256, HIST_L2_PASSES, True, 8.0,
               "2^24 uint8 keys (16 MB, L2-resident), counted 8 times per launch: 32 B per warp "
               "instruction, so the atomic unit (>= 1 cycle per instruction) is the bound whenever w > ~1"),
    HistRegime("l2_u8_64", HIST_L2_N, 1, 64, HIST_L2_PASSES, True, 8.0,
               "as l2_u8_256 with 64 bins: 2 words per bank, so POPC.INC's merging separates hist_inc "
               "from hist_add on uniform keys too (2.0 vs 3.5 wavefronts; at 256 bins 3.15 vs 3.54)"),
)
PAIR = ("hist_inc", "hist_add")
FIXED = "hist_lane_fix"  # the model's fixes: one wavefront per atomic (S), fewer atomics (X), loads ahead
BANK_FIX = "hist_lane"  # the first fix alone (what the unit's U asked for), to attribute the gain


def hist_regimes(dram_keys: int | None, gpu: bool) -> list[HistRegime]:
    """The regimes with their key counts for this run: the DRAM regime takes --hist-keys, and
    without a GPU every regime runs on HIST_DRY_N keys."""
    out = []
    for r in HIST_REGIMES:
        n = r.n_keys if gpu else HIST_DRY_N
        if r.name == "dram" and dram_keys:
            n = dram_keys
        out.append(r._replace(n_keys=n))
    return out


def hist_plan(regimes: list[HistRegime]) -> list[tuple[HistRegime, str, str]]:
    """(regime, input, kernel) in launch order: the order hist_child launches and histograms_ncu
    expects (the DRAM regime first, as in the first H200 report)."""
    return [(r, inp, k) for r in regimes for inp in HIST_INPUTS for k in HIST_KERNELS]


def make_keys(kind: str, n: int, device: str, seed: int = 0, *, nbins: int = HIST_NBINS,
              key_bytes: int = 4) -> torch.Tensor:
    """uniform: every bin alike; skewed: bin b with weight ~ 2^-b/8 (a few hot bins); single: one bin.
    int32 keys (high bits random) or uint8 keys (key_bytes = 1; bin = key & (nbins - 1))."""
    g = torch.Generator(device=device).manual_seed(seed)
    if key_bytes not in (1, 4):
        raise ValueError(f"key_bytes must be 1 or 4, got {key_bytes}")
    dtype = torch.uint8 if key_bytes == 1 else torch.int32
    top = 256 if key_bytes == 1 else 2**31 - 1
    if kind == "uniform":
        return torch.randint(0, top, (n,), generator=g, device=device, dtype=torch.int64).to(dtype)
    if kind == "skewed":
        u = torch.rand(n, generator=g, device=device)
        bins = torch.clamp((-8.0 * torch.log2(u.clamp_min(1e-12))).floor(), max=nbins - 1)
        high_max = max(256 // nbins, 1) if key_bytes == 1 else 2**20
        high = torch.randint(0, high_max, (n,), generator=g, device=device) * nbins
        return (bins.to(torch.int64) + high).to(dtype)
    if kind == "single":
        return torch.full((n,), 7, dtype=dtype, device=device)
    raise ValueError(kind)


def instruction_stats(keys: torch.Tensor, nbins: int) -> dict:
    """Per warp atomic instruction of the uint4 loop (lane l takes keys[k(base+l) .. +k-1], k = 16 /
    key bytes, one instruction per component), averaged: distinct bins, the bank-rule wavefronts
    (most distinct words in one bank: what ATOMS.POPC.INC costs) and the most lanes in one bank
    (what ATOMS.ADD costs: it does not merge lanes on one word)."""
    kpl = 16 // keys.element_size()
    n = keys.numel() // (32 * kpl) * (32 * kpl)
    bins = (keys[:n].to(torch.int64) & (nbins - 1)).view(-1, 32, kpl).transpose(1, 2).reshape(-1, 32)
    srt, _ = bins.sort(dim=1)
    first = torch.ones_like(srt, dtype=torch.bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    distinct = first.sum(dim=1)
    banks = torch.zeros(srt.shape[0], 32, dtype=torch.int64, device=srt.device)
    banks.scatter_add_(1, srt % 32, first.to(torch.int64))
    wave = banks.max(dim=1).values
    lanes = torch.zeros_like(banks)
    lanes.scatter_add_(1, srt % 32, torch.ones_like(srt))
    # hist_lane_fix: a lane whose kpl keys share a bin adds their count once; a warp step then
    # issues one add if any lane did and kpl increments if any lane did not
    per_lane = (keys[:n].to(torch.int64) & (nbins - 1)).view(-1, 32, kpl)
    lane_same = (per_lane == per_lane[:, :, :1]).all(dim=2)
    fix = lane_same.any(dim=1).to(torch.int64) + (~lane_same.all(dim=1)).to(torch.int64) * kpl
    return {"instructions": int(bins.shape[0]), "fix_instructions": int(fix.sum()),
            "distinct_mean": float(distinct.float().mean()),
            "wavefronts_mean": float(wave.float().mean()),
            "lanes_per_bank_mean": float(lanes.max(dim=1).values.float().mean()),
            "aggregate_instructions": int(distinct.sum())}


def hist_cost(kernel: str, stats: dict, passes: int = 1) -> tuple[int, float, str]:
    """(atomic warp instructions, wavefronts per instruction, counter class) of a kernel on these
    keys, by the rules the service table measured (add: most lanes in a bank, same 32 / mix4 8 /
    conflict4 4; POPC.INC: most distinct words in a bank, same 1 / mix4 1 / conflict4 4).
    hist_aggregate issues one (predicated) instruction per step whose active lanes hold distinct
    bins, so it costs the distinct-word count; the LANE_KERNELS put lane l in bank l: always 1.
    ``passes``: the launch counts the keys that many times."""
    inst = stats["instructions"] * passes
    if kernel == "hist_add":
        return inst, stats["lanes_per_bank_mean"], ncu.INST_ALU
    if kernel == "hist_aggregate":
        return inst, stats["wavefronts_mean"], ncu.INST_ALU
    if kernel == "hist_lane_fix":
        return stats["fix_instructions"] * passes, 1.0, ncu.INST_ATOM
    if kernel in LANE_KERNELS:
        return inst, 1.0, ncu.INST_ATOM
    return inst, stats["wavefronts_mean"], ncu.INST_ATOM  # hist_inc, hist_private


def synthetic_record(kernel: str, stats: dict, ms: float, sm_count: int, clock_mhz: float,
                     passes: int = 1) -> ncu.LaunchRecord:
    """A LaunchRecord built from what the run knows (no counters): the model's prediction path."""
    inst, w, cls = hist_cost(kernel, stats, passes)
    cycles = ms * 1e-3 * clock_mhz * 1e6 * sm_count
    rec = ncu.LaunchRecord("model", kernel)
    rec.metrics[cls] = ncu.MetricValue(float(inst), "inst")
    rec.metrics[f"{ncu.WAVEFRONTS}.sum"] = ncu.MetricValue(inst * w, "")
    rec.metrics[f"{ncu.CYCLES}.sum"] = ncu.MetricValue(cycles, "cycle")
    rec.metrics[ncu.WARPS_ACTIVE] = ncu.MetricValue(32.0, "warp")
    return rec


def predict_hist(table: ServiceTable, name: str, stats: dict, ms: float, sm_count: int, clock_mhz: float,
                 passes: int = 1):
    """The model's analysis of one histogram run from the data alone (no counters): S = cycles per
    wavefront (table, distinct_banks) x wavefronts per instruction (hist_cost)."""
    return analyze_record(synthetic_record(name, stats, ms, sm_count, clock_mhz, passes), table)


def hist_model(table: ServiceTable, name: str, stats: dict, regime: HistRegime, sm_count: int,
               clock_mhz: float) -> dict:
    """The prediction before any timing: per-SM atomic-unit cycles vs the key stream's."""
    inst, w, _ = hist_cost(name, stats, regime.passes)
    s = predict_hist(table, name, stats, 1.0, sm_count, clock_mhz).service_cycles
    atomic_cycles = inst / sm_count * s
    key_bytes = inst * 32 * regime.key_bytes  # each pass reads the keys again
    stream_cycles = key_bytes / (regime.assumed_tbps * 1e12) * clock_mhz * 1e6
    return {"wavefronts_per_inst": w, "service_cycles": s, "atomic_cycles_per_sm": atomic_cycles,
            "key_stream_cycles": stream_cycles, "atomic_ms": 1e3 * atomic_cycles / (clock_mhz * 1e6),
            "key_stream_ms": 1e3 * stream_cycles / (clock_mhz * 1e6),
            "predicted_bound": "atomic" if atomic_cycles > stream_cycles else "key stream"}


def histograms(runner, table: ServiceTable, reps: int, clock_mhz: float,
               regimes: list[HistRegime]) -> list[dict]:
    gpu = runner.kind == "gpu"
    device = "cuda" if gpu else "cpu"
    hist = Histogram() if gpu else None
    records = []
    for regime in regimes:
        for inp in HIST_INPUTS:
            keys = make_keys(inp, regime.n_keys, device, nbins=regime.nbins, key_bytes=regime.key_bytes)
            want = torch.bincount(keys.to(torch.int64) & (regime.nbins - 1), minlength=regime.nbins)
            stats = instruction_stats(keys, regime.nbins)
            for name in HIST_KERNELS:
                rec = {"regime": regime.name, "input": inp, "kernel": name,
                       "entry": hist_entry(name, regime.key_bytes), "n_keys": regime.n_keys,
                       "key_bytes": regime.key_bytes, "nbins": regime.nbins, "passes": regime.passes,
                       **stats}
                model = hist_model(table, name, stats, regime, runner.sm_count, clock_mhz)
                if gpu:
                    from smemkit.runtime.timing import time_gpu

                    out = torch.zeros(regime.nbins, dtype=torch.int32, device="cuda")
                    launch = hist.launcher(name, keys, out, regime.nbins, sm_count=runner.sm_count,
                                           passes=regime.passes)
                    launch()
                    torch.cuda.synchronize()
                    rec["correct"] = bool(torch.equal(out.to(torch.int64).cpu(), regime.passes * want.cpu()))
                    # No L2 flush in either regime: the L2 regimes must hit L2 (the warm-up launches
                    # leave the 16 MB of keys there), and the DRAM regime's 256 MB evict any cache
                    # by themselves (a flush would leave dirty lines to write back during the kernel).
                    # `out` keeps accumulating across repetitions and is not read again.
                    t = time_gpu(launch, warmup=3, reps=reps, graph=True, flush_l2=False)
                    ms, rec["p20_ms"], rec["p80_ms"] = t.median_ms, t.p20_ms, t.p80_ms
                else:
                    rec["correct"] = None
                    ms = max(model["atomic_ms"], model["key_stream_ms"])  # dry run: the model itself
                rec["ms"] = ms
                rec["keys_gbps"] = regime.passes * regime.key_bytes * regime.n_keys / (ms * 1e-3) / 1e9
                rec["model"] = model
                a = predict_hist(table, name, stats, ms, runner.sm_count, clock_mhz, regime.passes)
                rec["predicted"] = a.to_dict()
                records.append(rec)
                u = a.u_atom.median if a.u_atom else float("nan")
                log(f"histogram {regime.name:9s} {inp:8s} {name:15s} {ms:8.4f} ms  U(model) {u:.2f}  "
                    f"w {model['wavefronts_per_inst']:.2f}")
    for r in records:  # speed relative to the increment kernel of the same regime and input
        inc = next(x for x in records if (x["regime"], x["input"], x["kernel"]) ==
                   (r["regime"], r["input"], "hist_inc"))
        r["ratio_to_inc"] = r["ms"] / inc["ms"]
    return records


def case_study(records: list[dict], regimes: list[HistRegime]) -> list[dict]:
    """Per regime and input: does the pair differ by >= 20 %, and does the model-guided kernel beat
    both (and every other kernel)? With the model's U of each kernel."""
    out = []
    for regime in regimes:
        for inp in HIST_INPUTS:
            rows = {r["kernel"]: r for r in records if r["regime"] == regime.name and r["input"] == inp}
            ms = {k: r["ms"] for k, r in rows.items()}
            inc, add, lane = ms[PAIR[0]], ms[PAIR[1]], ms[FIXED]
            others = {k: v for k, v in ms.items() if k != FIXED}
            out.append({
                "regime": regime.name, "input": inp, "ms": ms,
                "pair_ratio": max(inc, add) / min(inc, add),
                "pair_differs_20pct": max(inc, add) >= 1.2 * min(inc, add),
                "lane_speedup_vs_inc": inc / lane, "lane_speedup_vs_add": add / lane,
                "lane_beats_pair": lane < min(inc, add),
                "bank_fix_speedup_vs_inc": inc / ms[BANK_FIX], "bank_fix_speedup_vs_add": add / ms[BANK_FIX],
                "fastest": min(ms, key=ms.get), "fastest_other": min(others, key=others.get),
                "u_model": {k: (r["predicted"]["u_atom"] or {}).get("median") for k, r in rows.items()},
                "verdict_model": {k: (r["predicted"]["verdict"] or {}).get("bottleneck")
                                  for k, r in rows.items()},
                "all_correct": all(r["correct"] is not False for r in rows.values()),
            })
    return out


def histograms_ncu(table: ServiceTable, out_dir: Path, regimes: list[HistRegime]) -> dict:
    """Profile the histogram kernels (one launch each per regime and input) under ncu and analyze
    the counters. Caches are not flushed between replay passes (--cache-control none) so the L2
    regimes' keys stay where the child put them (a warm-up read right before each launch)."""
    exe = find_tool("ncu")
    if exe is None:
        return {"status": "skipped: ncu not found"}
    report = out_dir / "atomics_hist.ncu-rep"
    dram = next(r for r in regimes if r.name == "dram")
    app = [sys.executable, str(Path(__file__).resolve()), "--hist-child", "--hist-keys", str(dram.n_keys)]
    cmd = ncu.profile_command(app, report, ncu=exe, kernel_regex="^hist_")
    cmd[1:1] = ["--cache-control", "none"]
    log(f"ncu: {' '.join(cmd[:8])} ...")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"status": f"ncu timed out after {NCU_TIMEOUT_S} s"}
    if proc.returncode != 0 or not report.is_file():
        return {"status": f"ncu failed ({proc.returncode})", "stderr": proc.stderr[-2000:]}
    export = subprocess.run(ncu.import_command(report, ncu=exe), capture_output=True, text=True, timeout=600)
    csv_path = out_dir / "atomics_hist_ncu.csv"
    csv_path.write_text(export.stdout)
    records = ncu.parse_csv(export.stdout)
    order = hist_plan(regimes)
    expected = [hist_entry(name, r.key_bytes) for r, _, name in order]
    launched = [r.kernel.split("(")[0].strip() for r in records]
    if launched != expected:
        return {"status": "ncu launches do not match the expected kernels", "launched": launched,
                "expected": expected}
    results = analyze(records, table, per_launch=True)
    out = []
    for (regime, inp, name), entry, res in zip(order, expected, results, strict=True):
        out.append({"regime": regime.name, "input": inp, "kernel": name, "entry": entry,
                    "analysis": res.to_dict()})
    shown = csv_path.relative_to(ROOT) if csv_path.is_relative_to(ROOT) else csv_path.name
    return {"status": "ok", "csv": str(shown), "launches": len(records), "cache_control": "none",
            "kernels": out}


def hist_child(n_keys: int) -> int:
    """Run each histogram kernel once per regime and input, in the order histograms_ncu expects
    (hist_plan). Before each launch of an L2 regime a torch reduction (not profiled: the regex
    takes hist_* only) reads the keys, so they sit in L2 as in the timed runs."""
    hist = Histogram()
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    keys = None
    for regime, inp, name in hist_plan(hist_regimes(n_keys, gpu=True)):
        if name == HIST_KERNELS[0]:  # a new (regime, input): new keys, the old ones freed first
            keys = None
            torch.cuda.empty_cache()  # less device memory for ncu to save and restore per pass
            keys = make_keys(inp, regime.n_keys, "cuda", nbins=regime.nbins, key_bytes=regime.key_bytes)
        out = torch.zeros(regime.nbins, dtype=torch.int32, device="cuda")
        if regime.l2_resident:
            keys.sum(dtype=torch.int64)
        hist.launcher(name, keys, out, regime.nbins, sm_count=sm_count, passes=regime.passes)()
        torch.cuda.synchronize()
    return 0


# ---- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path,
                    help=f"results JSON (default on a GPU: {DEFAULT_OUT.relative_to(ROOT)})")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: compile, SASS, placeholder pipeline")
    ap.add_argument("--quick", action="store_true", help="core variants and a coarse n grid only")
    ap.add_argument("--variants", help="comma-separated variants for the table (default: all, or core "
                    "with --quick)")
    ap.add_argument("--iters", type=int, default=1 << 14,
                    help="most atomics per warp per launch (multiple of 8); runs aim at ~4e6 cycles per SM")
    ap.add_argument("--reps", type=int, default=30, help="CUDA-event repetitions (median)")
    ap.add_argument("--hist-keys", type=int, default=None, help=f"keys of the DRAM-regime histograms "
                    f"(default {HIST_N}; the L2 regimes keep {HIST_L2_N}; all {HIST_DRY_N} in --dry-run)")
    ap.add_argument("--ncu", action="store_true", help="also profile the histogram kernels with ncu")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--hist-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.hist_child:
        return hist_child(args.hist_keys or HIST_N)
    gpu = not args.dry_run
    if gpu and not torch.cuda.is_available():
        ap.error("no CUDA GPU visible: run with --dry-run on a machine without one")
    out_path = args.out or (DEFAULT_OUT if gpu else None)
    arch = "sm_90a"
    if gpu:
        from smemkit.runtime.compiler import arch_for_capability

        arch = arch_for_capability(*torch.cuda.get_device_capability(0))
    variants_all = all_variants()
    if args.variants:
        names = [s.strip() for s in args.variants.split(",") if s.strip()]
    elif args.quick:
        names = list(CORE)
    else:
        names = [v.name for v in variants_all]
    chosen = [Variant.parse(n) for n in names]
    grid = QUICK_GRID if args.quick else N_GRID
    t0 = time.time()

    device = device_block()
    result: dict = {"status": "measured" if gpu else "dry-run: nothing here is measured",
                    "provenance": provenance(device), "device": device, "arch": arch}
    to_build = chosen if args.variants else variants_all
    if not args.skip_compile:
        log(f"compiling {len(to_build)} variants + histograms for {arch}")
        result["compile"] = compile_all(to_build, arch)
        bad = [k for k, v in result["compile"].items() if k != "histograms" and v["spills"]]
        if bad:
            raise SystemExit(f"kernels spill: {bad}")
    log("SASS check")
    try:
        result["sass"] = sass_check(to_build, arch)
    except ToolNotFoundError as exc:
        result["sass"] = {"status": f"failed: {exc}"}

    block = result["device"]
    clock = float(block.get("sm_clock_max_mhz") or 1980.0)
    if gpu:
        runner = GpuRunner(args.iters)
        gpu_name = block.get("gpu") or "unknown GPU"
        log(f"service table on {gpu_name}: {len(chosen)} variants x {len(TABLE_PATTERNS)} patterns x "
            f"{len(grid)} warp counts")
        shared = [n for n in names if n in CORE]
        table = build_table(runner, names, grid, shared, result["sass"], gpu_name, runner.sm_count, clock)
        result["timing_crosscheck"] = []
        for name in [n for n in names if n in CORE]:
            ms = runner.event_ms(name, "distinct_banks", 32, args.reps)
            cycles_per_inst = table.service(name, "distinct_banks", 32)
            expected_ms = args.iters * 32 * cycles_per_inst / (clock * 1e3)
            result["timing_crosscheck"].append({"variant": name, "event_ms": ms,
                                                "from_cycles_ms": expected_ms})
    else:
        runner = ModelRunner(placeholder_table())
        table = build_table(runner, names, grid, [n for n in names if n in CORE], result["sass"],
                            "placeholder model (dry run)", runner.sm_count, clock)
    result["service_table"] = table.to_dict()
    log("validation (held-out configurations)")
    result["validation"] = validation(runner, table, names)
    s = result["validation"]["summary"]
    a = result["validation"]["summary_all"]
    log(f"validation: {s['count']} atomic-bound records, median error {s['median']:.3f}, max {s['max']:.3f} "
        f"(all {a['count']}: median {a['median']:.3f}, max {a['max']:.3f})")
    regimes = hist_regimes(args.hist_keys, gpu)
    log("histogram case study: " + ", ".join(f"{r.name} ({r.n_keys} x {r.key_bytes} B x {r.passes}, "
                                             f"{r.nbins} bins)" for r in regimes))
    records = histograms(runner, table, args.reps, clock, regimes)
    result["histogram"] = {"regimes": [r.to_dict() for r in regimes], "pair": list(PAIR), "fixed": FIXED,
                           "records": records, "case_study": case_study(records, regimes)}
    for c in result["histogram"]["case_study"]:
        add_inc = c["ms"]["hist_add"] / c["ms"]["hist_inc"]
        log(f"case study {c['regime']:9s} {c['input']:8s} add/inc {add_inc:.2f}  lane speedup vs inc "
            f"{c['lane_speedup_vs_inc']:.2f}, vs add {c['lane_speedup_vs_add']:.2f}")
    if args.ncu and gpu:
        if out_path:  # everything measured so far survives an ncu failure or a killed command
            write_result(result, out_path, t0)
        out_dir = (out_path or DEFAULT_OUT).parent
        result["histogram"]["ncu"] = histograms_ncu(table, out_dir, regimes)
    if out_path:
        write_result(result, out_path, t0)
    else:
        log("dry run: no --out given, nothing written")
    return 0


def write_result(result: dict, out_path: Path, t0: float) -> None:
    result["elapsed_s"] = round(time.time() - t0, 1)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(_clean(result), indent=1, allow_nan=False) + "\n")
    log(f"wrote {out_path}")


def _clean(o):
    """JSON-safe: numpy scalars to Python, inf/nan to None."""
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (np.floating, np.integer)):
        o = o.item()
    if isinstance(o, float) and (math.isinf(o) or math.isnan(o)):
        return None
    return o


if __name__ == "__main__":
    sys.exit(main())
