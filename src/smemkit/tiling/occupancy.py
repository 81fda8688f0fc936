"""Theoretical occupancy for sm_80, sm_86, sm_89 and sm_90: resident blocks, the limiter, active warps.

The arithmetic follows the logic of NVIDIA's ``cuda_occupancy.h`` (the header behind
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``; read in the CUDA 12.6 copy, logic restated here):

* warps: ``max_warps_per_sm // ceil(threads / 32)``;
* blocks: the per-architecture resident-block cap;
* registers: a warp is allocated ``round_up(regs * 32, 256)`` registers (equivalently ``regs``
  rounded up to a multiple of 8 per thread); the 65 536 registers are split over 4 sub-partitions,
  so ``warps_fit = 4 * ((65536 / 4) // per_warp)`` and the limit is ``warps_fit // warps_per_block``;
  a block whose ``per_warp * round_up(warps, 4)`` exceeds 65 536 cannot launch at all;
* shared memory: a block is charged ``round_up(static + dynamic + 1 KB reserved, 128)``; the SM
  offers the configured carveout (by default the largest), and the limit is ``carveout // charge``.
  A carveout smaller than one block's charge is raised to the next step that fits, as the driver does.

Sources for the constants (cited, not copied):
  - ``cuda_occupancy.h`` (CUDA 12.6): blocks per SM 32 (8.0), 16 (8.6), 24 (8.9), 32 (9.0);
    register allocation unit 256 per warp; 4 sub-partitions; shared-memory allocation unit 128 B
    on 8.x/9.x; carveout steps 0/8/16/32/64/100/132/164 KB (8.0), 0/8/16/32/64/100 KB (8.6, 8.9),
    up to 196/228 KB (9.0); reserved shared memory per block added on 8.x and later.
  - NVIDIA Ampere tuning guide (quoted in numba issue #7897): A100 carveouts 0-164 KB, 8.6 0-100 KB.
  - CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (via PyTorch
    PR #45889 for 1536 threads/SM on 8.6): 64 warps/SM on 8.0 and 9.0, 48 on 8.6 and 8.9;
    65 536 registers per SM and per block; 255 registers per thread; 1 KB reserved per block;
    163 KB (8.0), 99 KB (8.6/8.9), 227 KB (9.0) per block with opt-in; 48 KB without opt-in.
  - NVIDIA Hopper tuning guide: 228 KB shared memory per SM, 227 KB per block; cluster size 8
    portable, 16 with the non-portable opt-in.

Cluster occupancy (sm_90): the driver places a cluster's blocks on P distinct SMs of one GPC, so
``max active clusters = sum over GPCs with >= P SMs of floor(sms_in_gpc * blocks_per_sm / P)``.
A cluster launch also holds at most 8 blocks per SM, whatever the other limits allow (the driver
answered 8 per SM for every configuration that fits more, cluster size 1 included, with or
without the 100 % carveout preference). The GPC sizes are the part's: for the 132-SM H200 SXM
we use 18, 18, 16 x 5, 8, 2 x 4 SMs, the one partition that reproduces the driver's answers on
six configurations (30 records; eight whole GPCs, 18, 18, 16 x 6, match 10 of 30), checked on
six held-out configurations with the 8-block cap: ``benchmarks/results/h200/tiling.json``.
Other parts: unmeasured (:func:`device_limits` drops the partition for another SM count).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from smemkit.errors import InvalidArgumentError, is_int

CLUSTER_BLOCKS_PER_SM_MAX = 8  # cudaOccupancyMaxActiveClusters on the H200 (tiling.json)

KB = 1024


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM resource limits of one compute capability (sources in the module docstring)."""

    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    smem_carveouts_kb: tuple[int, ...]
    smem_per_block_optin: int
    smem_per_block_default: int = 48 * KB
    smem_reserved_per_block: int = 1 * KB
    smem_granularity: int = 128
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    reg_alloc_unit: int = 256
    max_regs_per_thread: int = 255
    sub_partitions: int = 4
    max_threads_per_block: int = 1024
    max_cluster_portable: int = 0
    max_cluster_nonportable: int = 0
    gpc_sms: tuple[int, ...] = ()

    @property
    def smem_per_sm(self) -> int:
        return self.smem_carveouts_kb[-1] * KB


ARCHS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits("sm_80", 64, 32, (0, 8, 16, 32, 64, 100, 132, 164), 163 * KB),
    "sm_86": ArchLimits("sm_86", 48, 16, (0, 8, 16, 32, 64, 100), 99 * KB),
    "sm_89": ArchLimits("sm_89", 48, 24, (0, 8, 16, 32, 64, 100), 99 * KB),
    "sm_90": ArchLimits("sm_90", 64, 32, (0, 8, 16, 32, 64, 100, 132, 164, 196, 228), 227 * KB,
                        max_cluster_portable=8, max_cluster_nonportable=16,
                        gpc_sms=(18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2)),
}


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM, each limit in blocks (None: not limiting at all), and the limiter(s)."""

    arch: str
    threads: int
    regs: int
    smem: int
    warps_per_block: int
    blocks_per_sm: int
    limits: dict[str, int | None]
    limiting: tuple[str, ...]
    max_warps: int
    regs_per_block: int
    smem_per_block: int
    smem_per_sm: int
    cluster: int | None = None
    max_active_clusters: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def active_warps(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def occupancy(self) -> float:
        return self.active_warps / self.max_warps


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def arch_limits(arch: str) -> ArchLimits:
    """Limits for ``sm_90`` (also spelled ``sm90``, ``90`` or ``9.0``)."""
    key = "sm_" + str(arch).lower().removeprefix("sm").removeprefix("_").replace(".", "")
    if key not in ARCHS:
        raise InvalidArgumentError(f"arch={arch!r}: allowed are {', '.join(ARCHS)}")
    return ARCHS[key]


def _check_int(name: str, value, low: int, high: int | None, allowed: str) -> int:
    if not is_int(value) or value < low or (high is not None and value > high):
        raise InvalidArgumentError(f"{name}={value!r}: must be an integer {allowed}")
    return value


def device_limits(capability: tuple[int, int], *, sm_count: int, smem_per_sm: int, smem_per_block: int,
                  max_cluster: int) -> ArchLimits:
    """The limits :func:`occupancy` uses for a GPU known by a device profile's figures.

    An architecture of :data:`ARCHS` keeps its own limits, and its GPC partition only when that
    partition has the GPU's ``sm_count`` SMs (clusters are then counted as if packed evenly).
    Another architecture gets generic limits: 64 warps and 32 blocks per SM, ``smem_per_sm`` of
    shared memory (one carveout), ``smem_per_block`` per block, clusters up to ``max_cluster``.
    """
    key = f"sm_{capability[0]}{capability[1]}"
    if key in ARCHS:
        lim = ARCHS[key]
        return lim if sum(lim.gpc_sms) == sm_count else dataclasses.replace(lim, gpc_sms=())
    return ArchLimits(key, 64, 32, (smem_per_sm // KB,), smem_per_block,
                      max_cluster_portable=max_cluster, max_cluster_nonportable=max_cluster)


def resident_clusters(lim: ArchLimits, sm_count: int, threads: int, regs: int, smem: int,
                      cluster: int) -> int:
    """Clusters of ``cluster`` blocks a GPU of ``sm_count`` SMs holds at once: the blocks per SM of
    :func:`occupancy` (at most CLUSTER_BLOCKS_PER_SM_MAX), placed GPC by GPC with the arch's GPC
    partition, or evenly over the SMs (``blocks x sm_count // cluster``) where it has none."""
    if lim.gpc_sms:
        occ = occupancy(lim, threads, regs, smem, cluster=cluster,
                        non_portable_cluster=cluster > lim.max_cluster_portable)
        return int(occ.max_active_clusters)
    blocks = min(occupancy(lim, threads, regs, smem).blocks_per_sm, CLUSTER_BLOCKS_PER_SM_MAX)
    return blocks * sm_count // cluster


def occupancy(arch: str | ArchLimits, threads: int, regs: int, smem: int = 0, *, cluster: int | None = None,
              carveout_kb: int | None = None, non_portable_cluster: bool = False) -> Occupancy:
    """Theoretical occupancy of a kernel with ``threads`` per block, ``regs`` per thread and
    ``smem`` bytes (static + dynamic) of shared memory per block, on ``arch`` (a name of
    :data:`ARCHS`, or the limits themselves, e.g. from :func:`device_limits`)."""
    lim = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    _check_int("threads", threads, 1, lim.max_threads_per_block, f"in 1..{lim.max_threads_per_block}")
    _check_int("regs", regs, 0, lim.max_regs_per_thread, f"in 0..{lim.max_regs_per_thread}")
    _check_int("smem", smem, 0, lim.smem_per_block_optin,
               f"in 0..{lim.smem_per_block_optin} bytes (the {lim.name} per-block opt-in maximum)")
    notes = []
    warps = -(-threads // 32)
    limits: dict[str, int | None] = {"warps": lim.max_warps_per_sm // warps, "blocks": lim.max_blocks_per_sm}

    per_warp = _round_up(regs * 32, lim.reg_alloc_unit)
    regs_per_block = per_warp * warps
    if per_warp == 0:
        limits["registers"] = None
    elif per_warp * _round_up(warps, lim.sub_partitions) > lim.regs_per_block:
        limits["registers"] = 0
        notes.append(f"{regs} registers x {threads} threads exceed the {lim.regs_per_block} registers a "
                     "block may use: the launch fails (too many resources requested)")
    else:
        fit = lim.sub_partitions * ((lim.regs_per_sm // lim.sub_partitions) // per_warp)
        limits["registers"] = fit // warps

    charge = _round_up(smem + lim.smem_reserved_per_block, lim.smem_granularity)
    if carveout_kb is None:
        per_sm = lim.smem_per_sm
    else:
        if carveout_kb not in lim.smem_carveouts_kb:
            raise InvalidArgumentError(f"carveout_kb={carveout_kb!r}: {lim.name} allows "
                                       f"{', '.join(map(str, lim.smem_carveouts_kb))} KB")
        per_sm = carveout_kb * KB
        if per_sm < charge:
            per_sm = next(c * KB for c in lim.smem_carveouts_kb if c * KB >= charge)
            notes.append(f"carveout {carveout_kb} KB is below one block's {charge} B: the driver "
                         f"raises it to {per_sm // KB} KB")
    limits["shared_memory"] = per_sm // charge
    if smem > lim.smem_per_block_default:
        notes.append(f"{smem} B per block is above {lim.smem_per_block_default // KB} KB: needs "
                     "cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)")

    finite = {k: v for k, v in limits.items() if v is not None}
    blocks = min(finite.values())
    limiting = tuple(k for k, v in finite.items() if v == blocks)

    max_clusters = None
    if cluster is not None:
        max_clusters = _clusters(lim, cluster, blocks, non_portable_cluster, notes)
    return Occupancy(lim.name, threads, regs, smem, warps, blocks, limits, limiting, lim.max_warps_per_sm,
                     regs_per_block, charge, per_sm, cluster, max_clusters, tuple(notes))


def _clusters(lim: ArchLimits, cluster: int, blocks: int, non_portable: bool, notes: list[str]) -> int:
    if not lim.max_cluster_portable:
        raise InvalidArgumentError(f"cluster={cluster!r}: {lim.name} has no thread-block clusters "
                                   "(sm_90 only among the supported architectures)")
    top = lim.max_cluster_nonportable if non_portable else lim.max_cluster_portable
    _check_int("cluster", cluster, 1, top,
               f"in 1..{top}" + ("" if non_portable else " (16 needs the non-portable opt-in)"))
    if blocks > CLUSTER_BLOCKS_PER_SM_MAX:
        notes.append(f"clusters: at most {CLUSTER_BLOCKS_PER_SM_MAX} blocks per SM in a cluster launch "
                     f"(not {blocks})")
        blocks = CLUSTER_BLOCKS_PER_SM_MAX
    total = sum(n * blocks // cluster for n in lim.gpc_sms if n >= cluster)
    notes.append(f"clusters: GPCs of {'/'.join(map(str, lim.gpc_sms))} SMs (the H200's, fitted to "
                 f"the driver); a cluster's blocks on distinct SMs of one GPC")
    return total
