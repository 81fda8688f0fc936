"""``explain``/``advise``: the model's decision for a workload and shape, with every term.

Inputs come, in order of preference, from the profile's embedded measurement table at exactly
this (workload, M, N) (see :mod:`.tables`), or are estimated from the profile alone: T_B as the
re-read kernel at the profile's HBM bandwidth, T_ctrl as one cluster-barrier round per stage
per wave. Estimates are labelled as such: the model is only as good as its inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import DeviceProfile, select_profile
from smemkit.inputs import existing_file, run_python_file
from smemkit.reduction.cost_model import (
    CLUSTER_SIZES,
    KernelShape,
    Measured,
    Verdict,
    crossover,
    evaluate,
    rejection,
    resident_estimate,
    save_basis,
    shape_of,
)
from smemkit.reduction.spec import ReductionSpec
from smemkit.reduction.tables import table_for
from smemkit.reduction.workloads import BUILTIN, NEGATIVE_CONTROLS

WIDTHS = (4096, 8192, 16384, 32768, 65536)


@dataclass(frozen=True)
class Explanation:
    """The verdict at (M, N), where its inputs came from, and the predicted crossover N*."""

    workload: str
    M: int
    N: int
    profile: DeviceProfile
    verdict: Verdict | None
    inputs: str
    crossover: int | None
    crossover_widths: tuple[int, ...]
    rejected: str | None = None
    measured: Measured | None = None  # the model's inputs at (M, N): T_B, its kernel, T_ctrl
    save_basis: str | None = None  # which T_save rule applies, in words (cost_model.save_basis)


def load_spec(name_or_path: str) -> ReductionSpec:
    """A built-in workload (or negative control) by name, or the ReductionSpec in a Python file."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    if name_or_path in NEGATIVE_CONTROLS:
        return NEGATIVE_CONTROLS[name_or_path]
    path = existing_file(name_or_path)
    if path is not None and path.suffix == ".py":
        namespace = run_python_file(path, "workload spec file")
        found = [v for v in namespace.values() if isinstance(v, ReductionSpec)]
        if len(found) == 1:
            return found[0]
        raise InvalidArgumentError(f"{path} defines {len(found)} ReductionSpec objects; expected one")
    raise InvalidArgumentError(
        f"workload {name_or_path!r} is neither a built-in ({', '.join(BUILTIN)}), a negative control "
        f"({', '.join(NEGATIVE_CONTROLS)}) nor a .py spec file"
    )


def estimated_inputs(shape: KernelShape, L: int, profile: DeviceProfile) -> Measured:
    """Profile-only inputs: T_B at HBM bandwidth, T_ctrl = waves x L barrier rounds."""
    t_b = shape.M * shape.N * shape.baseline_bytes / (profile.hbm_tbps * 1e12) * 1e3
    controls = {}
    barrier = profile.dsmem.barrier_cycles
    for P in CLUSTER_SIZES:
        cycles = barrier.get(P) or (max(barrier.values()) if barrier else 0.0)
        waves = math.ceil(shape.M / resident_estimate(shape, P, profile))
        controls[P] = waves * L * cycles / (profile.sm_clock_ghz * 1e9) * 1e3
    return Measured(t_b, controls)


def inputs_at(spec: ReductionSpec, M: int, N: int,
              profile: DeviceProfile) -> tuple[KernelShape, Measured, str]:
    """Model inputs for one shape and where they came from."""
    builtin = spec is BUILTIN.get(spec.name)  # a user spec never borrows a built-in's table
    for point in table_for(profile.name):
        if builtin and (point.workload, point.shape.M, point.shape.N) == (spec.name, M, N):
            return point.shape, point.measured, f"measured: {point.source}"
    shape = shape_of(spec, M, N)
    return shape, estimated_inputs(shape, len(spec.stages), profile), (
        f"estimated from profile '{profile.name}' (no measured table entry for {spec.name} "
        f"at M = {M}, N = {N}): T_B at {profile.hbm_tbps:.2f} TB/s, T_ctrl = barrier rounds")


def explain(workload: str | ReductionSpec, M: int, N: int, profile: str | DeviceProfile | None = None
            ) -> Explanation:
    """The decision for ``workload`` at (M, N) on ``profile`` (default: the GPU's or H200's)."""
    spec = workload if isinstance(workload, ReductionSpec) else load_spec(workload)
    if M < 1 or N < 1:
        raise InvalidArgumentError(f"rows and width must be positive, got M = {M}, N = {N}")
    prof = profile if isinstance(profile, DeviceProfile) else select_profile(profile)[0]
    reason = rejection(spec)
    if reason is not None:
        return Explanation(spec.name, M, N, prof, None, "none needed", None, (), rejected=reason)
    shape, measured, source = inputs_at(spec, M, N, prof)
    verdict = evaluate(shape, prof, measured)
    widths = tuple(sorted({*WIDTHS, N}))
    verdicts = {}
    for width in widths:
        s, m, _ = inputs_at(spec, M, width, prof)
        verdicts[width] = evaluate(s, prof, m)
    return Explanation(spec.name, M, N, prof, verdict, source, crossover(verdicts), widths,
                       measured=measured, save_basis=save_basis(shape, prof, measured))
