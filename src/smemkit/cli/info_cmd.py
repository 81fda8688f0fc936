"""``smemkit info``: versions, GPU, CUDA headers, cache, and the device profile that applies."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from smemkit.cli.tables import show
from smemkit.hw.profile import DeviceProfile, builtin_profiles, select_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="versions, GPU, CUDA paths and the device profiles")
    p.add_argument("--profile", help="profile name or JSON file to show as the one in force")
    p.set_defaults(run=run)


def profile_table(profiles: dict[str, DeviceProfile], title: str) -> Table:
    """Profiles side by side, one row per figure (CREDIT Table II rows included)."""
    table = Table(title=title)
    table.add_column("figure")
    for name in profiles:
        table.add_column(name, justify="right")

    def row(label: str, fmt) -> None:
        table.add_row(label, *(fmt(p) for p in profiles.values()))

    def num(value: float | None, spec: str = ".2f") -> str:
        return "-" if value is None else format(value, spec)

    row("GPU", lambda p: p.gpu)
    row("compute capability", lambda p: "{}.{}".format(*p.compute_capability))
    row("SMs", lambda p: str(p.sm_count))
    row("SM clock (GHz)", lambda p: num(p.sm_clock_ghz))
    row("SMEM per SM / block (KiB)", lambda p: f"{p.smem_per_sm_bytes // 1024} / "
        f"{p.smem_per_block_bytes // 1024}")
    row("L2 (MiB)", lambda p: str(p.l2_bytes // 2**20))
    row("HBM achieved (TB/s)", lambda p: num(p.hbm_tbps))
    row("host copy engine (GB/s)", lambda p: num(p.host_copy_gbps, ".1f"))
    row("host SM loads, best (GB/s)",
        lambda p: num(max(p.host_sm_load_gbps.values()), ".1f") if p.host_sm_load_gbps else "-")
    row("max cluster size", lambda p: str(p.max_cluster_size))
    row("local load latency (cyc)", lambda p: num(p.dsmem.local_load_cycles, ".1f"))
    row("remote load latency (cyc)", lambda p: num(p.dsmem.remote_load_cycles, ".1f"))
    row("local read (B/cyc/CTA)", lambda p: num(p.dsmem.local_read_bpc))
    row("remote read (B/cyc/CTA)", lambda p: num(p.dsmem.remote_read_bpc))
    row("local store (B/cyc/CTA)", lambda p: num(p.dsmem.local_store_bpc))
    row("remote store (B/cyc/CTA)", lambda p: num(p.dsmem.remote_store_bpc))
    row("cluster barrier (cyc, by P)", lambda p: ", ".join(
        f"{k}:{v:.0f}" for k, v in sorted(p.dsmem.barrier_cycles.items())))
    return table


def run(args: argparse.Namespace) -> int:
    from smemkit.errors import SmemkitError
    from smemkit.hw.environment import software_versions
    from smemkit.runtime import cache
    from smemkit.runtime.device import gpu_available, gpu_info, require_gpu
    from smemkit.runtime.paths import cuda_include_dirs

    console = Console()
    console.print("[bold]smemkit[/bold] - memory scopes beyond one block's registers")
    for name, version in software_versions().items():
        console.print(f"  {name:14s} {version or 'not installed'}")
    if gpu_available():
        info = gpu_info(require_gpu())
        console.print(
            f"  GPU            {info.name} (sm_{info.capability[0]}{info.capability[1]}, "
            f"{info.sm_count} SMs, clusters {'yes' if info.supports_clusters else 'no'})"
        )
    else:
        console.print("  GPU            none visible (kernels need one; models and checks don't)")
    dirs = cuda_include_dirs()
    console.print(f"  CUDA headers   {', '.join(map(str, dirs)) if dirs else 'not found'}")
    try:
        c = cache.info()
        console.print(f"  kernel cache   {c.owned} ({c.entries} kernels, {c.records} records)")
    except SmemkitError as exc:  # info still reports the rest; compiling would raise the same
        console.print(f"  kernel cache   unusable: {exc}", markup=False)
    profile, reason = select_profile(args.profile)
    console.print(f"  profile        {profile.name}: {reason}")
    show(console, profile_table(builtin_profiles(), "Embedded device profiles"))
    return 0
