"""From Nsight Compute records and the service table to per-kernel utilization and a verdict.

For each kernel (launches of the same name merged, or each launch with ``per_launch``):

1. Shared-atomic warp instructions by class (atom / alu / cas) from the ``smsp__`` counters,
   wavefronts per instruction w from ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom``.
2. Service time per class at the SM's concurrency n (``sm__warps_active.avg.per_cycle_active``):
   with a known address pattern, S = table S(variant, pattern, n); with a known number K of
   distinct addresses per instruction (from the data, not the counters), S along the mix family
   at K times w; otherwise the wavefront-linear estimate S = w * (cycles per wavefront of the
   class's variant at n) — which prices a same-address instruction like a conflict-free one and
   so under-estimates serialized same-address atomics (see docs/atomics.md).
   S_eff = sum_k f_k S_k with f_k the class shares (c = f_cas).
3. Per SM i: U_i = (W_i / w) / C_i * S_eff, with W_i the SM's atomic wavefronts and C_i its
   active cycles: exact when ncu gives per-SM instance values, otherwise bounds from the
   rollups (min W / max C, sum W / sum C, max W / min C) and the middle one as the median.
4. The verdict (model.verdict) against issue slots, LSU, shared data pipe, L2 and DRAM.

Before any of that every launch is checked (:func:`check_record`): the metrics the verdict rests
on are present and numeric, and the counters agree with each other as they do on the H200 report
(``tests/data/atomics_hist_ncu.csv``, 63 launches): wavefronts = instructions + bank conflicts
exactly, ``.avg`` x SMs = ``.sum``, ``.min`` <= ``.sum`` / SMs <= ``.max``, active cycles below
the elapsed ones (0.78-1.00 of them there), percentages of peak in [0, 100]. A report that fails
is called inconsistent (an InvalidArgumentError): an edited or truncated report must not give a
verdict, least of all "no shared atomics".
"""

from __future__ import annotations

import math
import statistics
from collections import OrderedDict
from dataclasses import dataclass, field

from smemkit.atomics.model import PerSM, Verdict, md1_response, verdict
from smemkit.atomics.table import ServiceTable
from smemkit.errors import InvalidArgumentError
from smemkit.hw import ncu

# Without these the verdict cannot be given: the instruction classes, the atomic unit's work and
# time, the SM's concurrency (it picks S(n)) and the units that compete with it (model.verdict).
REQUIRED_METRICS: tuple[str, ...] = (
    ncu.INST_ATOM, ncu.INST_ALU, ncu.INST_CAS, f"{ncu.WAVEFRONTS}.sum", f"{ncu.CYCLES}.sum",
    ncu.WARPS_ACTIVE, ncu.DURATION, ncu.OTHER_UNITS["issue"], ncu.OTHER_UNITS["l2"],
    ncu.OTHER_UNITS["dram"],
)
MAX_WARPS_PER_SM = 64  # sm_80 and sm_90; the other architectures hold fewer
# Wavefronts per warp instruction beyond the bank conflicts: 1 for 32-bit atomics (every H200
# launch), 2 for 64-bit ones, 4 for a 128-bit CAS.
MAX_IDEAL_WAVEFRONTS = 4
# U above 1 beyond this is no measurement error of the service table (the H200 report's largest
# median U is 0.99) but counters that do not belong together.
UTILIZATION_LIMIT = 1.05
_REL = 1e-3  # counters print exactly; averages with two decimals
# Active cycles may pass duration x clock by the duration's rounding on short launches; the H200
# report's busiest SMs stay at or below 1.00 of it.
ELAPSED_SLACK = 1.05


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(abs(a), abs(b)) + 1.0


def _inconsistent(rec: ncu.LaunchRecord, why: str,
                  hint: str = "was it edited or truncated? Export it again") -> InvalidArgumentError:
    return InvalidArgumentError(f"the report is inconsistent at launch {rec.id} ({rec.kernel[:40]}): "
                                f"{why}; {hint}")


def _check_rollups(rec: ncu.LaunchRecord, base: str, units: float | None) -> None:
    """``base``'s .sum/.avg/.min/.max and per-SM instances agree with each other."""
    total, avg = rec.value(f"{base}.sum"), rec.value(f"{base}.avg")
    low, high = rec.value(f"{base}.min"), rec.value(f"{base}.max")
    for name, v in ((".sum", total), (".avg", avg), (".min", low), (".max", high)):
        if v is not None and v < 0:
            raise _inconsistent(rec, f"{base}{name} = {v:g} is negative")
    if low is not None and high is not None and low > high * (1 + _REL):
        raise _inconsistent(rec, f"{base}.min {low:g} exceeds .max {high:g}")
    if avg is not None and ((low is not None and avg < low * (1 - _REL))
                            or (high is not None and avg > high * (1 + _REL))):
        raise _inconsistent(rec, f"{base}.avg {avg:g} lies outside .min/.max")
    if total is not None and units:
        if avg is not None and not _close(avg * units, total):
            raise _inconsistent(rec, f"{base}.avg x {units:g} SMs = {avg * units:g}, .sum {total:g}")
        if low is not None and total < low * units * (1 - _REL):
            raise _inconsistent(rec, f"{base}.sum {total:g} is below .min x {units:g} SMs")
        if high is not None and total > high * units * (1 + _REL):
            raise _inconsistent(rec, f"{base}.sum {total:g} exceeds .max x {units:g} SMs")
    inst = rec.instances(f"{base}.sum")
    if inst:
        if total is not None and not _close(sum(inst), total):
            raise _inconsistent(rec, f"{base}.sum {total:g} is not the sum of its instances")
        if (low is not None and not _close(min(inst), low)) or (high is not None
                                                                and not _close(max(inst), high)):
            raise _inconsistent(rec, f"{base}'s instances do not match its .min/.max")


def check_record(rec: ncu.LaunchRecord) -> None:
    """Raise an InvalidArgumentError when a metric the verdict needs is missing or the counters
    of ``rec`` contradict each other (see the module docstring)."""
    missing = [m for m in REQUIRED_METRICS if rec.value(m) is None]
    if missing:
        raise InvalidArgumentError(
            f"launch {rec.id} ({rec.kernel[:40]}) lacks metric(s) {', '.join(missing)}, which the verdict "
            "needs: profile with `smemkit atomics profile` (`--print-command` shows the ncu command "
            "with every metric)")
    for name in (ncu.INST_ATOM, ncu.INST_ALU, ncu.INST_CAS, ncu.CONFLICTS):
        v = rec.value(name)
        if v is not None and v < 0:
            raise _inconsistent(rec, f"{name} = {v:g} is negative")
    for name in ncu.OTHER_UNITS.values():
        v = rec.value(name)
        if v is not None and not 0 <= v <= 100 * (1 + _REL):
            raise _inconsistent(rec, f"{name} = {v:g} is not a percentage in [0, 100]")
    warps = rec.value(ncu.WARPS_ACTIVE)
    if not 0 < warps <= MAX_WARPS_PER_SM:
        raise _inconsistent(rec, f"{ncu.WARPS_ACTIVE} = {warps:g}, not in (0, {MAX_WARPS_PER_SM}]")
    duration = rec.value(ncu.DURATION)
    if duration <= 0:
        raise _inconsistent(rec, f"{ncu.DURATION} = {duration:g} ns is not positive")
    sms = rec.value(ncu.SM_COUNT)
    if sms is not None and (sms < 1 or sms != int(sms)):
        raise _inconsistent(rec, f"{ncu.SM_COUNT} = {sms:g} is not a positive integer")
    cycles_sum, cycles_avg = rec.value(f"{ncu.CYCLES}.sum"), rec.value(f"{ncu.CYCLES}.avg")
    if sms is None and cycles_avg:
        sms = round(cycles_sum / cycles_avg) or None  # SMs from the cycle rollups
    _check_rollups(rec, ncu.CYCLES, sms)
    _check_rollups(rec, ncu.WAVEFRONTS, sms)
    clock_khz = rec.value(ncu.CLOCK_RATE)
    busiest = rec.value(f"{ncu.CYCLES}.max") or (cycles_sum / sms if sms else None)
    if clock_khz and busiest is not None and busiest > duration * clock_khz * 1e-6 * ELAPSED_SLACK:
        raise _inconsistent(rec, f"an SM was active {busiest:g} cycles, more than the {duration:g} ns "
                            f"launch lasted at {clock_khz / 1e6:g} GHz")
    classes, _ = instruction_classes(*(rec.value(m) for m in (ncu.INST_ATOM, ncu.INST_ALU, ncu.INST_CAS)))
    total = sum(classes.values())
    wavefronts = rec.value(f"{ncu.WAVEFRONTS}.sum")
    conflicts = rec.value(ncu.CONFLICTS) or 0.0
    if wavefronts < (total + conflicts) * (1 - _REL) - 1 or \
            wavefronts > (MAX_IDEAL_WAVEFRONTS * total + conflicts) * (1 + _REL) + 1:
        raise _inconsistent(rec, f"{wavefronts:g} atomic wavefronts for {total:g} shared-atomic warp "
                            f"instructions and {conflicts:g} bank conflicts (wavefronts are instructions "
                            f"+ conflicts, up to {MAX_IDEAL_WAVEFRONTS} per instruction for wide types)")
    if total > 0 and not cycles_sum:
        raise _inconsistent(rec, f"{total:g} shared-atomic instructions in 0 active SM cycles")


# Which microbenchmark stands for each counter class (an assumption: which counter each op
# increments is not measured; see docs/atomics.md).
CLASS_VARIANTS = {"alu": "add.int32.noret", "cas": "cas.int32.ret", "atom": "inc.int32.noret"}


@dataclass
class KernelAnalysis:
    kernel: str
    launches: int
    instructions: dict[str, float]
    counters_inclusive: bool
    wavefronts_per_inst: float | None
    conflicts_per_inst: float | None
    warps_per_sm: float
    cas_fraction: float
    service_cycles: float | None
    rate_per_cycle: float | None
    u_atom: PerSM | None
    others: dict[str, float | None]
    verdict: Verdict | None
    response_cycles: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel, "launches": self.launches, "instructions": self.instructions,
            "counters_inclusive": self.counters_inclusive,
            "wavefronts_per_inst": self.wavefronts_per_inst, "conflicts_per_inst": self.conflicts_per_inst,
            "warps_per_sm": self.warps_per_sm, "cas_fraction": self.cas_fraction,
            "service_cycles": self.service_cycles, "rate_per_cycle": self.rate_per_cycle,
            "u_atom": None if self.u_atom is None else self.u_atom.to_dict(),
            "others": self.others, "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "response_cycles": self.response_cycles, "notes": self.notes,
        }


def instruction_classes(atom: float, alu: float, cas: float) -> tuple[dict[str, float], bool]:
    """Disjoint class counts and whether ``atom`` was the inclusive total (atom == alu + cas)."""
    if alu + cas > 0 and math.isclose(atom, alu + cas, rel_tol=1e-3):
        return {"atom": 0.0, "alu": alu, "cas": cas}, True
    return {"atom": atom, "alu": alu, "cas": cas}, False


def _sum_instances(a: tuple[float, ...] | None, b: tuple[float, ...] | None) -> tuple[float, ...] | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x + y for x, y in zip(a, b, strict=True))


def merge_launches(records: list[ncu.LaunchRecord]) -> ncu.LaunchRecord:
    """One record for several launches of a kernel: counts add, per-SM instances add, the min/max
    rollups add (a bound), percentages are averaged weighted by duration."""
    if len(records) == 1:
        return records[0]
    first = records[0]
    merged = ncu.LaunchRecord(",".join(r.id for r in records), first.kernel, first.block, first.grid,
                              first.device, first.cc)
    weights = [r.value(ncu.DURATION) or 1.0 for r in records]
    names = OrderedDict((n, None) for r in records for n in r.metrics)
    for name in names:
        vals = [r.metrics.get(name) for r in records]
        present = [(v, w) for v, w in zip(vals, weights, strict=True)
                   if v is not None and v.value is not None]
        if not present:
            continue
        unit = present[0][0].unit
        if ".pct_of_peak" in name or name.endswith(".per_cycle_active") or name.startswith("device__"):
            total_w = sum(w for _, w in present)
            value = sum(v.value * w for v, w in present) / total_w
            merged.metrics[name] = ncu.MetricValue(value, unit)
            continue
        inst = present[0][0].instances
        for v, _ in present[1:]:
            inst = _sum_instances(inst, v.instances)
        merged.metrics[name] = ncu.MetricValue(sum(v.value for v, _ in present), unit, inst)
    return merged


def _class_service(table: ServiceTable, variant: str, n: float, w: float | None,
                   pattern: str | None, scope: str, distinct: float | None) -> float:
    if pattern is not None:
        return table.service_estimate(variant, pattern, n, scope)
    if distinct is not None:
        # K distinct addresses per instruction along the mix family, times the bank passes
        return table.family_service(variant, "mix", distinct, n, scope) * max(w or 1.0, 1.0)
    return table.per_wavefront(variant, n, scope) * (w if w else 1.0)


def analyze_record(rec: ncu.LaunchRecord, table: ServiceTable, *, pattern: str | None = None,
                   scope: str = "private", launches: int = 1,
                   class_variants: dict[str, str] | None = None,
                   distinct: float | None = None) -> KernelAnalysis:
    """``distinct``: mean distinct addresses per atomic instruction, when known (not from counters)."""
    class_variants = {**CLASS_VARIANTS, **(class_variants or {})}
    notes: list[str] = []
    atom, alu, cas = (rec.value(m) or 0.0 for m in (ncu.INST_ATOM, ncu.INST_ALU, ncu.INST_CAS))
    classes, inclusive = instruction_classes(atom, alu, cas)
    total = sum(classes.values())
    others = {k: (None if rec.value(m) is None else rec.value(m) / 100.0) for k, m in ncu.OTHER_UNITS.items()}
    n = rec.value(ncu.WARPS_ACTIVE)
    if n is None:
        n = 32.0
        notes.append(f"{ncu.WARPS_ACTIVE} missing: assumed 32 warps per SM")
    if inclusive:
        notes.append(f"{ncu.INST_ATOM} equals _dot_alu + _dot_cas: treated as the total")
    if total <= 0:
        notes.append("no shared-memory atomic instructions in this kernel")
        return KernelAnalysis(rec.kernel, launches, classes, inclusive, None, None, n, 0.0, None, None, None,
                              others, None, notes=notes)
    w_sum = rec.value(f"{ncu.WAVEFRONTS}.sum")
    w = w_sum / total if w_sum else None
    conflicts = rec.value(ncu.CONFLICTS)
    services = {k: _class_service(table, class_variants[k], n, w, pattern, scope, distinct)
                for k, c in classes.items() if c > 0}
    s_eff = sum(classes[k] / total * s for k, s in services.items())
    cas_fraction = classes["cas"] / total

    cycles_sum = rec.value(f"{ncu.CYCLES}.sum")
    w_inst = rec.instances(f"{ncu.WAVEFRONTS}.sum")
    c_inst = rec.instances(f"{ncu.CYCLES}.sum")
    u_atom: PerSM | None = None
    rate = None
    if w and w_inst and c_inst and len(w_inst) == len(c_inst):
        per_sm = [(wi / w) / ci * s_eff for wi, ci in zip(w_inst, c_inst, strict=True) if ci > 0]
        u_atom = PerSM.of(per_sm)
        rate = statistics.median((wi / w) / ci for wi, ci in zip(w_inst, c_inst, strict=True) if ci > 0)
    elif cycles_sum:
        rate = total / cycles_sum
        mid = rate * s_eff
        w_min, w_max = rec.value(f"{ncu.WAVEFRONTS}.min"), rec.value(f"{ncu.WAVEFRONTS}.max")
        c_min, c_max = rec.value(f"{ncu.CYCLES}.min"), rec.value(f"{ncu.CYCLES}.max")
        lo = hi = mid
        if w and None not in (w_min, w_max, c_min, c_max) and c_min > 0 and c_max > 0:
            lo = min(mid, (w_min / w) / c_max * s_eff)
            hi = max(mid, (w_max / w) / c_min * s_eff)
        sms = rec.value(ncu.SM_COUNT) or table.sm_count
        u_atom = PerSM(lo, mid, hi, "rollups", int(sms))
        notes.append("no per-SM instance values: U min/max are bounds from the rollups, the median "
                     "is the all-SM average (sum of work / sum of active cycles)")
    else:
        notes.append(f"{ncu.CYCLES}.sum missing: utilization not computed")
    v = verdict(u_atom, others) if u_atom is not None else None
    response = md1_response(min(u_atom.median, 0.999), s_eff) if u_atom is not None else None
    if not table.measured:
        notes.append(f"service table is a {table.source} ({table.gpu}): NOT MEASURED, verdicts are "
                     "illustrative until the H200 table exists")
    return KernelAnalysis(rec.kernel, launches, classes, inclusive, w,
                          None if conflicts is None else conflicts / total, n, cas_fraction, s_eff, rate,
                          u_atom, others, v, response, notes)


def _check_utilization(rec: ncu.LaunchRecord, u_atom: PerSM | None, table: ServiceTable,
                       pattern: str | None) -> None:
    """A report's U per SM must stay within [0, UTILIZATION_LIMIT]: the unit is busy at most all
    the time. (Predictions from synthetic records, benchmarks/atomics.py, skip this check.)"""
    if u_atom is None:
        return
    if u_atom.median > UTILIZATION_LIMIT or (u_atom.source == "instances" and u_atom.max > UTILIZATION_LIMIT):
        raise _inconsistent(rec, f"the atomic unit's utilization U = {u_atom.median:.2f} (median), "
                            f"{u_atom.max:.2f} (max) exceeds 1: the counters, the service table "
                            f"({table.gpu})" + (f" and --pattern {pattern}" if pattern else "")
                            + " do not fit together",
                            f"is {pattern} the kernel's address pattern?" if pattern else
                            "was the report edited, or is the table another GPU's?")


def analyze(records: list[ncu.LaunchRecord], table: ServiceTable, *, per_launch: bool = False,
            pattern: str | None = None, scope: str = "private",
            class_variants: dict[str, str] | None = None) -> list[KernelAnalysis]:
    if not records:
        raise InvalidArgumentError("the report holds no kernel launches")
    for r in records:
        check_record(r)
    if per_launch:
        groups = [[r] for r in records]
    else:
        by_name: dict[str, list[ncu.LaunchRecord]] = OrderedDict()
        for r in records:
            by_name.setdefault(r.kernel, []).append(r)
        groups = list(by_name.values())
    out = []
    for g in groups:
        merged = merge_launches(g)
        result = analyze_record(merged, table, pattern=pattern, scope=scope, launches=len(g),
                                class_variants=class_variants)
        _check_utilization(merged, result.u_atom, table, pattern)
        if per_launch:
            result.kernel = f"{result.kernel} [launch {g[0].id}]"
        out.append(result)
    return out
