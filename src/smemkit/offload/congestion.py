"""Congestion control for direct host reads: how many CTAs read host memory, with how many bytes
in flight each (DAK's congestion window; SPEC §2; issue 5).

Too few host-reading CTAs or too small a window and the PCIe link idles; too many and the host
requests crowd the memory system the HBM-reading CTAs depend on. The probe (``congestion.cu``)
sweeps H host-reading CTAs x W bytes in flight per CTA while the other CTAs of the same grid
stream HBM, and measures, from per-CTA ``%globaltimer`` stamps, the host bandwidth and the HBM
bandwidth achieved *at the same time*; it also measures each alone (host CTAs with no HBM
traffic; the same HBM CTAs with no host traffic).

:func:`choose_window` picks, among the points reaching ``host_fraction`` (95 %) of the best host
bandwidth, those with the least HBM drop (within ``drop_tolerance``), and of those the smallest
total window H x W (then the fewest CTAs). The result is a plain dict that fits the device
profile's optional ``host_congestion`` field; :func:`default_host_config` reads it back for
``split_linear`` (8 CTAs x 16 KB when the profile has none).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache

from smemkit.errors import InvalidArgumentError, check_positive_int
from smemkit.offload.host_window import KernelWindow
from smemkit.offload.split_plan import HOST_WINDOW_UNIT, window_to_host_steps

SOURCE = "offload/congestion.cu"
PROBE_THREADS = 256
HBM_LPT = 8
H_VALUES = (1, 2, 4, 8, 16, 32)
WINDOWS = (4096, 8192, 16384, 32768, 65536)
DEFAULT_HOST_CTAS = 16  # the split GEMV's measured best on the H200 (see split_gemv_host_ctas)
DEFAULT_WINDOW = 16384
# The split GEMV's host CTAs also do the math, so each keeps its window full less of the time than
# the probe's read-only CTAs: the H200 sweep (benchmarks/results/h200/offload_sweep.json) measured
# 16 CTAs x 16 KB at 0.84x the time of the probe's pick (8 x 16 KB), geomean over 12 shapes and
# ratios, never slower. So the GEMV takes the most CTAs, up to SPLIT_HOST_CTAS_MAX (issue 5 bounds
# host readers at 16), whose HBM drop the probe measured within HBM_DROP_LIMIT at the chosen window.
SPLIT_HOST_CTAS_MAX = 16
HBM_DROP_LIMIT = 0.03
PROBE_PARAMS = ("ptr", "u64", "ptr", "u64", "i32", "i32", "u64", "ptr", "ptr")


def lpt_for_window(window_bytes: int) -> int:
    """16-byte loads in flight per probe thread for a per-CTA window (4 KB units, 1..16)."""
    unit = PROBE_THREADS * 16
    lpt = window_bytes // unit if isinstance(window_bytes, int) else 0
    if lpt not in (1, 2, 4, 8, 16) or lpt * unit != window_bytes:
        allowed = [unit * v for v in (1, 2, 4, 8, 16)]
        raise InvalidArgumentError(f"probe window must be one of {allowed} bytes, got {window_bytes!r}")
    return lpt


@dataclass(frozen=True)
class CongestionPoint:
    """One (H, window) measurement. Bandwidths in GB/s (host) and TB/s (HBM)."""

    host_ctas: int
    window_bytes: int
    host_gbps: float
    hbm_tbps: float | None = None
    host_alone_gbps: float | None = None
    hbm_alone_tbps: float | None = None

    @property
    def hbm_drop(self) -> float | None:
        """1 - (HBM rate with host reads running) / (the same CTAs' rate without them)."""
        if self.hbm_tbps is None or not self.hbm_alone_tbps:
            return None
        return 1.0 - self.hbm_tbps / self.hbm_alone_tbps

    def as_dict(self) -> dict:
        d = asdict(self)
        d["hbm_drop"] = self.hbm_drop
        d["total_window_bytes"] = self.host_ctas * self.window_bytes
        return d


def choose_window(points: Sequence[CongestionPoint], *, host_fraction: float = 0.95,
                  drop_tolerance: float = 0.005, drop_limit: float = HBM_DROP_LIMIT) -> dict:
    """The smallest (H, window) with host bandwidth >= host_fraction x the best and a small HBM drop.

    Among points reaching the host threshold, keep those whose drop is within ``drop_tolerance``
    (absolute) of the least drop or within ``drop_limit`` (a negative drop, i.e. noise, counts as
    0; a point without an HBM measurement counts as 0 drop), then take the least H x window, then
    the least H, then the least window. The limit keeps the pick stable: on the H200 every drop
    was 0-2 % with about 1 % of noise, and the least-drop rule alone picked 8 x 16 KB in one sweep
    and 32 x 4 KB in the next.
    """
    if not points:
        raise InvalidArgumentError("no congestion measurements to choose from")
    if not 0 < host_fraction <= 1 or drop_tolerance < 0:
        raise InvalidArgumentError("host_fraction must be in (0, 1] and drop_tolerance >= 0")
    usable = [p for p in points if math.isfinite(p.host_gbps) and p.host_gbps > 0]
    if not usable:
        raise InvalidArgumentError("every congestion point measured zero host bandwidth")
    best = max(p.host_gbps for p in usable)
    reaching = [p for p in usable if p.host_gbps >= host_fraction * best]

    def drop(p: CongestionPoint) -> float:
        d = p.hbm_drop
        return 0.0 if d is None or not math.isfinite(d) else max(0.0, d)

    least = min(drop(p) for p in reaching)
    near = [p for p in reaching if drop(p) <= max(least + drop_tolerance, drop_limit)]
    pick = min(near, key=lambda p: (p.host_ctas * p.window_bytes, p.host_ctas, p.window_bytes))
    return {
        "host_ctas": pick.host_ctas,
        "window_bytes": pick.window_bytes,
        "host_gbps": pick.host_gbps,
        "hbm_drop": pick.hbm_drop,
        "best_host_gbps": best,
        "reaching": len(reaching),
        "rule": (f"host >= {host_fraction:.0%} of the best ({best:.1f} GB/s); HBM drop within "
                 f"{drop_tolerance:.1%} of the least or <= {drop_limit:.0%}; then least H x window, "
                 f"least H, least window"),
    }


def split_host_ctas(points: Sequence[CongestionPoint], choice: dict, *,
                    host_fraction: float = 0.95) -> int:
    """Host CTAs for the split GEMV: the most (<= SPLIT_HOST_CTAS_MAX) that the probe measured at
    the chosen window reaching ``host_fraction`` of the best host rate with an HBM drop within
    HBM_DROP_LIMIT; the probe's own pick when none does."""
    best = max((p.host_gbps for p in points if math.isfinite(p.host_gbps)), default=0.0)
    ok = [p.host_ctas for p in points
          if p.window_bytes == choice["window_bytes"] and p.host_ctas <= SPLIT_HOST_CTAS_MAX
          and math.isfinite(p.host_gbps) and p.host_gbps >= host_fraction * best
          and p.hbm_drop is not None and math.isfinite(p.hbm_drop) and p.hbm_drop <= HBM_DROP_LIMIT]
    return max(ok, default=min(int(choice["host_ctas"]), SPLIT_HOST_CTAS_MAX))


def profile_field(choice: dict, *, source: str, split_ctas: int | None = None) -> dict:
    """The ``host_congestion`` entry of a device profile from a :func:`choose_window` result
    (``split_ctas``: :func:`split_host_ctas`, default the probe's pick)."""
    steps = window_to_host_steps(choice["window_bytes"])
    return {
        "host_ctas": int(choice["host_ctas"]),
        "window_bytes": int(choice["window_bytes"]),
        "split_gemv_host_ctas": int(choice["host_ctas"] if split_ctas is None else split_ctas),
        "split_gemv_window_bytes": steps * HOST_WINDOW_UNIT,
        "host_gbps": float(choice["host_gbps"]),
        "hbm_drop": None if choice.get("hbm_drop") is None else float(choice["hbm_drop"]),
        "source": source,
    }


@cache
def _default_for(device_index: int) -> tuple[int, int, str]:
    from smemkit.hw.profile import select_profile

    profile, reason = select_profile()
    field = getattr(profile, "host_congestion", None)
    if isinstance(field, dict) and isinstance(field.get("host_ctas"), int) and field["host_ctas"] >= 1:
        window = field.get("split_gemv_window_bytes") or field.get("window_bytes") or DEFAULT_WINDOW
        ctas = field.get("split_gemv_host_ctas") or field["host_ctas"]
        return int(ctas), int(window), f"profile {profile.name} host_congestion ({reason})"
    return (DEFAULT_HOST_CTAS, DEFAULT_WINDOW,
            f"built-in default (profile {profile.name} has no host_congestion)")


def default_host_config(device_index: int = 0) -> tuple[int, int]:
    """(host CTAs, window bytes) for split kernels on ``device_index``: the device profile's
    congestion choice when it has one, else 16 CTAs x 16 KB."""
    ctas, window, _ = _default_for(device_index)
    return ctas, window


def resolve_host_config(host_ctas: int | None, host_window: int | None, device_index: int,
                        window: KernelWindow) -> tuple[int, int]:
    """(host CTAs, window in the kernel's units) for a split kernel: the caller's values, else the
    device default; the default window rounds to the nearest one ``window`` supports, a caller's
    window must be one of them (else InvalidArgumentError)."""
    if host_ctas is None or host_window is None:
        d_ctas, d_window = default_host_config(device_index)
        host_ctas = d_ctas if host_ctas is None else host_ctas
        units = window.nearest(d_window) if host_window is None else window.units(host_window)
    else:
        units = window.units(host_window)
    check_positive_int("host_ctas", host_ctas)
    return host_ctas, units


def default_host_config_source(device_index: int = 0) -> str:
    return _default_for(device_index)[2]


# ---- measuring (GPU) ------------------------------------------------------------------------------

def bytes_and_span(rows) -> tuple[int, int]:
    """(bytes, span in ns) of per-CTA stats rows (start ns, end ns, bytes, ...): the bytes summed,
    the span from the first start to the last end."""
    rows = [tuple(int(v) for v in r[:3]) for r in rows]
    if not rows:
        return 0, 0
    return sum(r[2] for r in rows), max(r[1] for r in rows) - min(r[0] for r in rows)


def role_rates(stats, host_ctas: int) -> tuple[float | None, float | None]:
    """(host GB/s, HBM TB/s) from the kernel's per-CTA stats (rows: start ns, end ns, bytes, sink).

    Each role's rate is its bytes over its span (last end - first start); None when the role had
    no CTA or moved no bytes.
    """
    rows = list(stats)

    def rate(sel: list) -> float | None:
        total, span = bytes_and_span(sel)
        if total == 0:
            return None
        return total / span if span > 0 else None  # bytes per ns = GB/s

    host = rate(rows[:host_ctas])
    hbm = rate(rows[host_ctas:])
    return host, (None if hbm is None else hbm / 1000.0)


class CongestionProbe:
    """Launches ``congestion_probe`` on the current GPU (2 CTAs per SM, forced by shared memory)."""

    def __init__(self, *, host_mib: int = 64, hbm_mib: int = 1024, host_load: int = 0) -> None:
        import torch

        from smemkit.offload.pinned import PinnedBuffer
        from smemkit.runtime.compiler import package_source
        from smemkit.runtime.device import gpu_info, require_gpu
        from smemkit.runtime.launch import KernelModule

        self.device_index = require_gpu()
        info = gpu_info(self.device_index)
        self.sm_count = info.sm_count
        self.ctas_per_sm = 2
        self.smem = info.smem_per_sm // 3  # three of these do not fit one SM, two do
        self.grid = self.sm_count * self.ctas_per_sm
        self.module = KernelModule(package_source(SOURCE), f"offload/congestion.hl{host_load}",
                                   {"HOST_LOAD": host_load})
        self.kernel = self.module.function("congestion_probe", PROBE_PARAMS)
        self.host = PinnedBuffer(host_mib << 20, device=self.device_index)
        self.host.tensor(torch.uint8).fill_(1)
        self.hbm = torch.ones(hbm_mib << 20, dtype=torch.uint8, device="cuda")
        self.done = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.stats = torch.zeros(self.grid * 4, dtype=torch.int64, device="cuda")
        self.hbm_iters_alone = 1000

    def run(self, host_ctas: int, window_bytes: int, *, grid: int | None = None,
            host_bytes: int | None = None, hbm_min_iters: int = 0) -> tuple[float | None, float | None]:
        import torch

        grid = self.grid if grid is None else grid
        if not 0 <= host_ctas <= grid:
            raise InvalidArgumentError(f"host_ctas = {host_ctas} must be in [0, grid = {grid}]")
        host_bytes = self.host.nbytes if host_bytes is None else host_bytes
        lpt = lpt_for_window(window_bytes)
        self.done.zero_()
        self.stats.zero_()
        self.kernel.launch(grid, PROBE_THREADS, self.host.device_ptr, host_bytes // 16, self.hbm,
                           self.hbm.numel() // 16, host_ctas, lpt, hbm_min_iters, self.done, self.stats,
                           smem=self.smem)
        torch.cuda.synchronize()
        return role_rates(self.stats.view(-1, 4)[:grid].cpu().tolist(), host_ctas)

    def point(self, host_ctas: int, window_bytes: int, reps: int = 3) -> CongestionPoint:
        together, alone, hbm_alone = [], [], []
        for _ in range(reps):
            together.append(self.run(host_ctas, window_bytes))
            alone.append(self.run(host_ctas, window_bytes, grid=host_ctas)[0])
            hbm_alone.append(self.run(host_ctas, window_bytes, host_bytes=0,
                                      hbm_min_iters=self.hbm_iters_alone)[1])

        def med(values: list[float | None]) -> float | None:
            vals = [v for v in values if v is not None]
            return statistics.median(vals) if vals else None

        return CongestionPoint(
            host_ctas=host_ctas, window_bytes=window_bytes,
            host_gbps=med([t[0] for t in together]) or 0.0,
            hbm_tbps=med([t[1] for t in together]),
            host_alone_gbps=med(alone), hbm_alone_tbps=med(hbm_alone))

    def free(self) -> None:
        self.host.free()


def run_congestion_probe(*, host_values: Sequence[int] = H_VALUES, windows: Sequence[int] = WINDOWS,
                         reps: int = 3, host_mib: int = 64, hbm_mib: int = 1024,
                         progress: Callable[[str], None] = lambda _m: None) -> dict:
    """Sweep host CTAs x window on the current GPU; return the points, the choice and the profile
    field (see the module docstring)."""
    for w in windows:
        lpt_for_window(w)
    probe = CongestionProbe(host_mib=host_mib, hbm_mib=hbm_mib)
    try:
        host_values = [h for h in host_values if 1 <= h < probe.grid]
        probe.run(1, windows[0], host_bytes=1 << 20)  # load the module, warm the link
        full = [probe.run(0, windows[0], host_bytes=0, hbm_min_iters=probe.hbm_iters_alone)[1]
                for _ in range(reps)]
        points = []
        for h in host_values:
            for w in windows:
                p = probe.point(h, w, reps)
                progress(f"H={h:3d} window={w // 1024:3d} KB: host {p.host_gbps:6.2f} GB/s "
                         f"(alone {p.host_alone_gbps or 0:6.2f}), HBM {p.hbm_tbps or 0:5.3f} TB/s "
                         f"(alone {p.hbm_alone_tbps or 0:5.3f})")
                points.append(p)
        choice = choose_window(points)
        source = (f"smemkit offload congestion probe: {probe.grid} CTAs of {PROBE_THREADS} threads "
                  f"({probe.ctas_per_sm} per SM), {host_mib} MiB pinned host reads (ld.global.cs) against "
                  f"a read-only stream of a {hbm_mib} MiB device buffer, median of {reps}")
        return {
            "grid": probe.grid, "ctas_per_sm": probe.ctas_per_sm, "threads": PROBE_THREADS,
            "host_bytes": probe.host.nbytes, "hbm_buffer_bytes": probe.hbm.numel(), "reps": reps,
            "hbm_alone_full_grid_tbps": (statistics.median([v for v in full if v is not None])
                                         if any(full) else None),
            "points": [p.as_dict() for p in points],
            "choice": choice,
            "profile_field": profile_field(choice, source=source,
                                           split_ctas=split_host_ctas(points, choice)),
        }
    finally:
        probe.free()
