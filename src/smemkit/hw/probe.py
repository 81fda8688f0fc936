"""``smemkit probe``: measure the current GPU and fill a :class:`DeviceProfile`.

Figures (each the median of ``trials`` launches, at least 15):
- DSMEM primitives of CREDIT Table II on two CTAs forced onto different SMs (kernels in
  ``probe_kernels.cu``), and the cluster barrier for every legal cluster size;
- the SM clock under load (a spin kernel timed with events), next to the driver's nominal clock;
- HBM bandwidth of a device-to-device copy (bytes read + written over time);
- host-to-device bandwidth of the copy engine (pinned memory) and of SM loads of pinned memory
  through its UVA pointer, against the number of CTAs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import DeviceProfile, DsmemPrimitives, builtin_profiles
from smemkit.runtime.compiler import package_source
from smemkit.runtime.device import (
    NON_PORTABLE_CLUSTER_MAX,
    PORTABLE_CLUSTER_MAX,
    gpu_info,
    require_cluster_support,
    require_gpu,
)
from smemkit.runtime.launch import Kernel, KernelModule
from smemkit.runtime.timing import time_gpu

RATE_THREADS = 256
RATE_ITERS = 4096
CHASE_STEPS = 20000
BARRIER_WARMUP, BARRIER_REPS = 100, 1000
HOST_CTA_COUNTS = (1, 2, 4, 8, 16, 32, 64, 132, 264)
RATE_MODES = {"local_read": 0, "remote_read": 1, "local_store": 2, "remote_store": 3}

Progress = Callable[[str], None]


@cache
def _module() -> KernelModule:
    return KernelModule(package_source("hw/probe_kernels.cu"), "probe_kernels")


def _kernel(name: str, params: tuple[str, ...]) -> Kernel:
    return _module().function(name, params)


def spread_smem_bytes(smem_per_sm: int, smem_per_block_optin: int, static: int = 128) -> int:
    """Dynamic shared memory per CTA just over half an SM, so two CTAs cannot share one SM."""
    want = ((smem_per_sm // 2 + 256) // 256) * 256
    return min(want, smem_per_block_optin - static)


def _run_cluster(kernel: Kernel, P: int, smem: int, *args: object, slots: int) -> list[int]:
    out = torch.zeros(slots, dtype=torch.int64, device="cuda")
    kernel.launch(P, RATE_THREADS, out, *args, cluster=P, smem=smem)
    torch.cuda.synchronize()
    return out.tolist()


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def measure_dsmem(trials: int, smem: int, progress: Progress) -> dict:
    """Latencies, rates and barrier cycles; also the SM ids seen, to prove CTAs were apart."""
    raw: dict = {"spread_smem_bytes": smem, "sm_pairs": []}
    chase = _kernel("smem_chase", ("ptr", "i32", "i32"))
    for label, remote in (("local_load_cycles", 0), ("remote_load_cycles", 1)):
        progress(f"{label}: dependent loads")
        cycles = []
        for _ in range(trials):
            out = _run_cluster(chase, 2, smem, CHASE_STEPS, remote, slots=4)
            raw["sm_pairs"].append(out[:2])
            cycles.append(out[2] / CHASE_STEPS)
        raw[label] = _median(cycles)
        raw[label + "_all"] = cycles
    rate = _kernel("smem_rate", ("ptr", "i32", "i32"))
    bytes_moved = RATE_THREADS * RATE_ITERS * 4
    for label, mode in RATE_MODES.items():
        progress(f"{label}: 256 threads, 32-bit accesses")
        bpc = []
        for _ in range(trials):
            out = _run_cluster(rate, 2, smem, RATE_ITERS, mode, slots=4)
            raw["sm_pairs"].append(out[:2])
            bpc.append(bytes_moved / out[2])
        raw[label + "_bpc"] = _median(bpc)
        raw[label + "_bpc_all"] = bpc
    raw["distinct_sms"] = all(a != b for a, b in raw["sm_pairs"])
    raw["barrier_cycles"] = {}
    barrier = _kernel("cluster_barrier", ("ptr", "i32", "i32"))
    for P in (2, 4, 8, 16):
        if P > PORTABLE_CLUSTER_MAX and not _nonportable_ok(barrier, P, smem):
            continue
        if barrier.max_active_clusters(P, RATE_THREADS, smem) < 1:
            progress(f"cluster size {P} cannot be resident with {smem} B per CTA; skipped")
            continue
        progress(f"cluster barrier, P = {P}")
        cycles = []
        for _ in range(trials):
            out = _run_cluster(barrier, P, smem, BARRIER_WARMUP, BARRIER_REPS, slots=P + 1)
            cycles.append(out[P] / BARRIER_REPS)
        raw["barrier_cycles"][P] = _median(cycles)
    return raw


def _nonportable_ok(kernel: Kernel, P: int, smem: int) -> bool:
    try:
        fits = kernel.max_active_clusters(P, RATE_THREADS, smem)
        return P <= NON_PORTABLE_CLUSTER_MAX and fits > 0
    except Exception:  # the driver refuses the opt-in on this GPU
        return False


def measure_clock(trials: int) -> float:
    """SM clock in GHz while every SM spins: cycles counted by clock64 over event time."""
    spin = _kernel("spin", ("ptr", "u64"))
    sms = gpu_info(torch.cuda.current_device()).sm_count
    out = torch.zeros(sms, dtype=torch.int64, device="cuda")
    cycles = 20_000_000
    timing = time_gpu(lambda: spin.launch(sms, 32, out, cycles), warmup=2, reps=trials)
    return cycles / (timing.median_ms * 1e6)


def measure_hbm_copy(trials: int, gib: float = 2.0) -> float:
    """TB/s of a device-to-device copy of ``gib`` GiB, counting bytes read plus written."""
    n = int(gib * 2**30) // 4
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    timing = time_gpu(lambda: dst.copy_(src), warmup=3, reps=trials)
    return 2 * n * 4 / (timing.median_ms * 1e-3) / 1e12


def measure_host(trials: int, progress: Progress) -> dict:
    """Copy-engine and SM-load bandwidth from pinned host memory, GB/s."""
    n_bytes = 1 << 30
    host = torch.empty(n_bytes // 4, dtype=torch.float32).pin_memory()
    host.uniform_()
    dev = torch.empty(n_bytes // 4, dtype=torch.float32, device="cuda")
    progress("host->device copy engine, 1 GiB pinned")
    copy = time_gpu(lambda: dev.copy_(host, non_blocking=True), warmup=2, reps=trials)
    result: dict = {"host_copy_gbps": n_bytes / (copy.median_ms * 1e-3) / 1e9, "sm_load_gbps": {}}
    reader = _kernel("stream_read", ("ptr", "u64", "ptr"))
    window = host[: (256 << 20) // 4]  # 256 MiB keeps the slow few-CTA points short
    sink = torch.zeros(max(HOST_CTA_COUNTS), dtype=torch.int64, device="cuda")
    for ctas in HOST_CTA_COUNTS:
        progress(f"SM loads of pinned memory, {ctas} CTAs x 256 threads")
        t = time_gpu(lambda c=ctas: reader.launch(c, 256, window, window.numel() // 4, sink),
                     warmup=1, reps=trials)
        result["sm_load_gbps"][ctas] = window.numel() * 4 / (t.median_ms * 1e-3) / 1e9
    return result


def run_probe(trials: int = 15, progress: Progress = lambda _msg: None) -> dict:
    """Measure everything and return ``{"profile": ..., "raw": ...}`` (profile as a dict)."""
    if trials < 15:
        raise InvalidArgumentError(f"--trials must be at least 15 (the CREDIT methodology), got {trials}")
    index = require_gpu()
    info = gpu_info(index)
    require_cluster_support(2, index)
    smem = spread_smem_bytes(info.smem_per_sm, info.smem_per_block_optin)
    raw = {"dsmem": measure_dsmem(trials, smem, progress)}
    progress("SM clock under load")
    raw["sm_clock_measured_ghz"] = measure_clock(trials)
    progress("HBM device-to-device copy, 2 GiB")
    raw["hbm_copy_tbps"] = measure_hbm_copy(trials)
    raw["host"] = measure_host(trials, progress)
    d = raw["dsmem"]
    # the largest cluster the barrier probe could place (CTAs of half an SM each): on Hopper this
    # is the non-portable maximum, 16, when the driver allows it
    max_cluster = max(d["barrier_cycles"]) if d["barrier_cycles"] else 1
    nominal_ghz = info.sm_clock_khz / 1e6
    profile = DeviceProfile(
        name=_profile_name(info.name),
        gpu=info.name,
        compute_capability=info.capability,
        sm_count=info.sm_count,
        sm_clock_ghz=nominal_ghz,
        smem_per_sm_bytes=info.smem_per_sm,
        smem_per_block_bytes=info.smem_per_block_optin,
        l2_bytes=info.l2_bytes,
        hbm_tbps=raw["hbm_copy_tbps"],
        host_copy_gbps=raw["host"]["host_copy_gbps"],
        host_sm_load_gbps=raw["host"]["sm_load_gbps"],
        max_cluster_size=max_cluster,
        dsmem=DsmemPrimitives(
            local_load_cycles=d["local_load_cycles"],
            remote_load_cycles=d["remote_load_cycles"],
            local_read_bpc=d["local_read_bpc"],
            remote_read_bpc=d["remote_read_bpc"],
            local_store_bpc=d["local_store_bpc"],
            remote_store_bpc=d["remote_store_bpc"],
            barrier_cycles=d["barrier_cycles"],
        ),
        provenance={
            "dsmem": f"smemkit probe: median of {trials} launches, 2 CTAs of 256 threads on "
            f"different SMs ({smem} B dynamic shared memory each), 32-bit accesses",
            "sm_clock_ghz": "driver's nominal clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE); the "
            f"clock measured under a spin load was {raw['sm_clock_measured_ghz']:.3f} GHz",
            "hbm_tbps": "smemkit probe: 2 GiB device-to-device copy, (read + write) / time",
            "host_copy_gbps": "smemkit probe: 1 GiB pinned host -> device copy",
            "host_sm_load_gbps": "smemkit probe: 16-byte SM loads of 256 MiB pinned host memory "
            "through its UVA pointer, by CTAs of 256 threads",
        },
    )
    return {"profile": profile.to_dict(), "raw": raw}


def _profile_name(gpu_name: str) -> str:
    from smemkit.hw.profile import profile_for_gpu_name

    return profile_for_gpu_name(gpu_name) or gpu_name.lower().replace(" ", "_")


def paper_reference() -> dict[str, dict]:
    """Table II of the paper for the embedded H100 and RTX 5090, for side-by-side display."""
    return {
        name: p.to_dict()["dsmem"]
        for name, p in builtin_profiles().items()
        if name in ("h100_sxm", "rtx5090")
    }
