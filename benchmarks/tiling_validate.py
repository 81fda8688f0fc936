"""Validate smemkit.tiling on the GPU: predicted shared-memory wavefronts against Nsight Compute,
and the occupancy calculator against the driver (issue 7).

    python3 benchmarks/tiling_validate.py                 # H200: writes benchmarks/results/h200/tiling.json
    python3 benchmarks/tiling_validate.py --dry-run --out /tmp/tiling.json   # no GPU needed

Wavefronts. Every pattern of ``smemkit.tiling.validation_suite.validation_suite()`` becomes one
microkernel (one block of the pattern's shape; its only shared-memory traffic is the pattern's, by
inline PTX ``ld/st.volatile.shared`` of the access width; shared memory is never initialised).
All kernels are compiled into one module; a driver process (this script with ``--driver``)
launches each once, plus a baseline kernel with no shared access, under ONE Nsight Compute run:

    ncu --clock-control none --target-processes all --kernel-name regex:^smk_tiling_
        --metrics <METRICS> --csv --page raw --print-units base --log-file <tmp>
        python3 benchmarks/tiling_validate.py --driver --driver-out <tmp.json>

The driver also checks, from a trace buffer every kernel fills, that each thread used exactly the
byte offset the analyzer predicted (and that the block's shared window starts 128-byte aligned).
Each pattern record holds ``pattern``, ``predicted_wavefronts``, ``measured_wavefronts``,
``instructions`` (predicted warp instructions) and ``measured_instructions``, per-op detail,
the address check and, where ``cuobjdump`` exists, the LDS/STS count of the SASS.

Occupancy. ``--occupancy-configs`` (default 60) random (threads, register target, dynamic smem)
configurations: a register-hungry kernel (benchmarks/kernels/tiling_occupancy.cu) is compiled per
register target with ``-maxrregcount``; the register count ptxas reports goes into
``smemkit.tiling.occupancy.occupancy`` and is compared with
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` (through cuda.core). Max active clusters for
cluster sizes 1/2/4/8/16 on a few configurations are recorded next to the calculator's estimate
(the calculator calls that an estimate; equality is not required).

``--dry-run`` generates and compiles everything, checks the kernels' offset code with a host C++
compiler when one exists, computes every prediction and writes the same JSON with the measured
fields null.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    import smemkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(HERE.parent / "src"))

from smemkit.errors import InvalidArgumentError, ToolNotFoundError  # noqa: E402
from smemkit.hw import ncu  # noqa: E402
from smemkit.runtime.compiler import compile_module, dump_sass  # noqa: E402
from smemkit.runtime.paths import find_tool  # noqa: E402
from smemkit.tiling.microkernel import (  # noqa: E402
    BASELINE_BLOCK,
    BASELINE_KERNEL,
    KERNEL_PREFIX,
    OPS,
    MicroKernel,
    host_check_source,
    parse_host_check,
    suite_source,
)
from smemkit.tiling.occupancy import occupancy  # noqa: E402
from smemkit.tiling.validation_suite import SuiteCase, suite_kernels, validation_suite  # noqa: E402

DEFAULT_OUT = HERE / "results" / "h200" / "tiling.json"
OCC_SOURCE_PATH = HERE / "kernels" / "tiling_occupancy.cu"
OCC_KERNEL = "smk_tiling_occupancy"
SUITE_LABEL = "tiling_validate_suite"

# (record key, metric); the first four are required, the rest are dropped if ncu refuses them.
METRICS = (
    ("wavefronts_load", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
    ("wavefronts_store", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    ("instructions_load", "smsp__inst_executed_op_shared_ld.sum"),
    ("instructions_store", "smsp__inst_executed_op_shared_st.sum"),
    ("bank_conflicts_load", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("bank_conflicts_store", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ("wavefronts_shared_all", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
)
REQUIRED_METRICS = 4

REG_TARGETS = (16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 128, 168, 200, 232, 255)
THREAD_CHOICES = (32, 64, 96, 128, 160, 192, 256, 288, 384, 512, 640, 768, 1024)
CLUSTER_SIZES = (1, 2, 4, 8, 16)
# (threads, register target, dynamic smem bytes) for the cluster records. The GPC partition in
# smemkit.tiling.occupancy was fitted to the first six on the H200; the rest are held out.
CLUSTER_CONFIGS = ((128, 32, 0), (256, 64, 48 * 1024), (512, 32, 100 * 1024), (1024, 32, 0),
                   (256, 128, 20 * 1024), (192, 40, 150 * 1024))
CLUSTER_HELD_OUT = ((64, 32, 0), (128, 32, 16 * 1024), (96, 48, 4 * 1024), (384, 40, 30 * 1024),
                    (160, 64, 60 * 1024), (640, 24, 70 * 1024))
SMEM_OPTIN = 227 * 1024


# --------------------------------------------------------------------------------------------
# Suite, compile, host check


def select_cases(only: str | None) -> list[SuiteCase]:
    cases = validation_suite()
    if only:
        rx = re.compile(only)
        cases = [c for c in cases if rx.search(c.name) or rx.search(c.family)]
    return cases


def build(only: str | None) -> list[tuple[SuiteCase, MicroKernel]]:
    return suite_kernels(select_cases(only))


def compile_suite(kernels: list[MicroKernel], arch: str):
    return compile_module(suite_source(kernels), SUITE_LABEL, arch=arch)


def host_compiler() -> str | None:
    for name in ("g++", "c++", "clang++"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def host_address_check(kernels: list[MicroKernel]) -> dict:
    """Compile the kernels' __host__ __device__ offset functions with a host C++ compiler and
    compare every offset with the analyzer's table. {"compiler": ..., "ok": {...}} or a skip."""
    exe = host_compiler()
    expr = [k for k in kernels if k.mode == "expr"]
    if exe is None:
        return {"compiler": None, "skipped": "no host C++ compiler found", "ok": {}}
    with tempfile.TemporaryDirectory() as d:
        src, binary = Path(d) / "offsets.cpp", Path(d) / "offsets"
        src.write_text(host_check_source(expr))
        try:
            subprocess.run([exe, "-std=c++17", "-O1", "-o", str(binary), str(src)], check=True,
                           capture_output=True, text=True, timeout=300)
            out = subprocess.run([str(binary)], check=True, capture_output=True, text=True,
                                 timeout=300).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", "") or ""
            return {"compiler": exe, "skipped": f"host check failed: {exc} {detail[-2000:]}", "ok": {}}
    tables = parse_host_check(out)
    return {"compiler": exe, "ok": {k.name: tables.get(k.name) == k.address_table for k in expr}}


# --------------------------------------------------------------------------------------------
# Nsight Compute


def find_ncu(explicit: str | None) -> str | None:
    if explicit:
        return explicit if Path(explicit).exists() or shutil.which(explicit) else None
    return find_tool("ncu")


def _kernel_name(text: str) -> str:
    return str(text).strip().split("(")[0].strip()


def parse_ncu_csv(text: str) -> dict[str, dict[str, float | int | None]]:
    """{kernel name: {metric: value}} from ``ncu --csv`` output (raw or details page; the parser
    is smemkit.hw.ncu's). A kernel profiled several times keeps its first (lowest ID) result."""
    try:
        records = ncu.parse_csv(text)
    except InvalidArgumentError:
        return {}
    result: dict[str, dict] = {}
    for rec in sorted(records, key=lambda r: int(r.id) if r.id.strip().isdigit() else 1 << 62):
        metrics = {name: (int(m.value) if m.value is not None and float(m.value).is_integer() else m.value)
                   for name, m in rec.metrics.items()}
        result.setdefault(_kernel_name(rec.kernel), metrics)
    return result


def ncu_command(ncu: str, metrics: list[str], log: Path, driver_out: Path, only: str | None) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all",
           "--kernel-name", f"regex:^{KERNEL_PREFIX}", "--metrics", ",".join(metrics),
           "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(log),
           sys.executable, str(Path(__file__).resolve()), "--driver", "--driver-out", str(driver_out)]
    if only:
        cmd += ["--only", only]
    return cmd


def child_env() -> dict[str, str]:
    import smemkit

    env = dict(os.environ)
    src = str(Path(smemkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_ncu(ncu: str, only: str | None, timeout: int, workdir: Path) -> dict:
    """Profile the driver once (all metrics; again with the required four if that fails)."""
    sets = ([m for _, m in METRICS], [m for _, m in METRICS[:REQUIRED_METRICS]])
    return profile_attempts(ncu, sets, lambda m, log, out: ncu_command(ncu, m, log, out, only),
                            timeout, workdir)


def profile_attempts(ncu: str, metric_sets, make_cmd, timeout: int, workdir: Path) -> dict:
    """Run ``make_cmd(metrics, log, driver_out)`` under ncu for each metric set in turn until one
    gives parsable results; every attempt is recorded (also used by tiling_worked_example.py)."""
    info: dict = {"path": ncu, "attempts": []}
    try:
        v = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
        info["version"] = (v.stdout.strip().splitlines() or [""])[-1]
    except (OSError, subprocess.SubprocessError) as exc:
        info["version"] = f"unknown ({exc})"
    for metrics in metric_sets:
        log = workdir / f"ncu_{len(metrics)}.csv"
        driver_out = workdir / f"driver_{len(metrics)}.json"
        cmd = make_cmd(metrics, log, driver_out)
        attempt: dict = {"command": " ".join(cmd), "metrics": metrics}
        t0 = time.time()
        timed_out = False
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
            attempt["returncode"] = proc.returncode
            stdout, tail = proc.stdout, (proc.stdout + proc.stderr)[-4000:]
        except subprocess.TimeoutExpired as exc:
            timed_out = True
            attempt["returncode"] = None
            attempt["error"] = f"timed out after {timeout} s"
            raw = exc.stdout or ""
            stdout = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            tail = stdout[-4000:]
        attempt["seconds"] = round(time.time() - t0, 1)
        text = log.read_text(errors="replace") if log.exists() else ""
        parsed = parse_ncu_csv(text) or parse_ncu_csv(stdout)  # the report goes to --log-file
        attempt["kernels_parsed"] = sorted(parsed)
        errors = [ln for ln in (text + "\n" + tail).splitlines() if "==ERROR==" in ln or "==WARNING==" in ln]
        attempt["messages"] = errors[:20]
        if not parsed:
            attempt["output_tail"] = tail[-2000:]
        info["attempts"].append(attempt)
        if parsed:
            info.update(command=attempt["command"], metrics=metrics, results=parsed,
                        driver=_read_json(driver_out))
            return info
        if timed_out:
            break  # no time left for a second run inside the device command's limit
    info["results"] = {}
    info["error"] = "ncu produced no parsable results (see attempts)"
    return info


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def run_driver_plain(only: str | None, workdir: Path, timeout: int) -> dict | None:
    """The driver without ncu (address checks only), when ncu is missing or failed."""
    out = workdir / "driver_plain.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--driver", "--driver-out", str(out)]
    if only:
        cmd += ["--only", only]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
        tail = (proc.stdout + proc.stderr)[-3000:]
    except subprocess.SubprocessError as exc:
        tail = str(exc)
    return _read_json(out) or {"kernels": {}, "error": f"driver wrote no report: {tail}"}


# --------------------------------------------------------------------------------------------
# The driver (runs under ncu)


def driver(only: str | None, out_path: Path) -> int:
    """Launch every suite kernel once (and the baseline), check the traced offsets, write JSON."""
    import torch

    from smemkit.runtime.launch import KernelModule

    pairs = build(only)
    kernels = [k for _, k in pairs]
    module = KernelModule(suite_source(kernels), SUITE_LABEL)
    dev = torch.device("cuda", torch.cuda.current_device())
    report: dict = {"kernels": {}, "error": None}
    launched = []
    try:
        base = module.function(BASELINE_KERNEL, ("ptr", "ptr", "ptr"))
        b_out = torch.zeros(BASELINE_BLOCK[0] + 1, dtype=torch.int32, device=dev)
        b_trace = torch.zeros(BASELINE_BLOCK[0], dtype=torch.int32, device=dev)
        base.launch(1, BASELINE_BLOCK, b_out, b_trace, 0, smem=128)
        for k in kernels:
            fn = module.function(k.name, ("ptr", "ptr", "ptr"))
            out = torch.zeros(k.threads + 1, dtype=torch.int32, device=dev)
            trace = torch.full((len(k.slots) * k.threads,), -9, dtype=torch.int32, device=dev)
            table = (torch.tensor(k.address_table, dtype=torch.int32, device=dev)
                     if k.mode == "table" else None)
            fn.launch(1, k.block, out, trace, table if table is not None else 0, smem=k.smem_bytes)
            launched.append((k, out, trace, table))
        torch.cuda.synchronize()
    except Exception as exc:  # a launch or fault: keep what ran
        report["error"] = f"{type(exc).__name__}: {exc}"
    for k, out, trace, _table in launched:
        try:
            got = trace.cpu().tolist()
            sbase = int(out[k.threads].item()) & 0xFFFFFFFF
        except Exception as exc:
            report["kernels"][k.name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            continue
        want = k.address_table
        bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
        entry = {"ok": not bad and sbase % 128 == 0, "mismatches": len(bad), "smem_base": sbase}
        if bad:
            i = bad[0]
            entry["first_mismatch"] = {"slot": i // k.threads, "tid": i % k.threads,
                                       "got": got[i], "want": want[i]}
        report["kernels"][k.name] = entry
    out_path.write_text(json.dumps(report))
    return 0 if report["error"] is None else 1


# --------------------------------------------------------------------------------------------
# SASS (cuobjdump), when present


def sass_counts(cubin: bytes) -> dict[str, dict[str, int]] | None:
    try:
        return parse_sass(dump_sass(cubin, timeout=300))
    except (ToolNotFoundError, OSError, subprocess.SubprocessError):
        return None


def parse_sass(text: str) -> dict[str, dict[str, int]]:
    """{function: {"LDS": n, "STS": n}} from ``cuobjdump -sass`` text (LDSM/STSM not counted)."""
    counts: dict[str, dict[str, int]] = {}
    current = None
    op = re.compile(r"(?<![\w.])(LDS|STS)(?:\.[A-Z0-9_.]+)?\s")
    for line in text.splitlines():
        m = re.search(r"Function\s*:\s*(\S+)", line)
        if m:
            current = counts.setdefault(m.group(1), {"LDS": 0, "STS": 0})
            continue
        if current is not None:
            for hit in op.finditer(line):
                current[hit.group(1)] += 1
    return counts


# --------------------------------------------------------------------------------------------
# Records


def pattern_record(case: SuiteCase, k: MicroKernel, usage, host_ok, measured: dict | None,
                   baseline: dict | None, addr: dict | None, sass: dict | None) -> dict:
    p = k.prediction
    rec: dict = {
        "pattern": case.name, "family": case.family, "kernel": k.name, "mode": k.mode,
        "description": case.pattern.description, "block": list(k.block), "threads": k.threads,
        "smem_bytes": k.smem_bytes, "slots": len(k.slots), "static_ops": k.static_ops,
        "widths": sorted({a.width for a in case.pattern.accesses}),
        "dtypes": sorted({case.pattern.arrays[a.array].dtype for a in case.pattern.accesses}),
        "ops": sorted({a.op for a in case.pattern.accesses}),
        "predicted_wavefronts": p.wavefronts, "predicted_ideal": p.ideal,
        "instructions": p.instructions_all, "instructions_active": p.instructions,
        "predicted": p.as_dict(),
        "registers": usage.registers if usage else None, "spills": usage.spills if usage else None,
        "host_address_check": host_ok,
        "address_check": addr,
        "sass": sass,
        "measured_wavefronts": None, "measured_instructions": None, "measured": None,
        "match": None, "instructions_match": None,
    }
    if measured is not None:
        def val(key: str) -> int | None:
            v = measured.get(key)
            b = (baseline or {}).get(key) or 0
            return None if v is None else v - b

        by_op = {op: {"wavefronts": val(f"wavefronts_{op}"), "instructions": val(f"instructions_{op}"),
                      "bank_conflicts": measured.get(f"bank_conflicts_{op}")} for op in OPS}
        rec["measured"] = {**by_op, "wavefronts_shared_all": measured.get("wavefronts_shared_all"),
                           "baseline_subtracted": bool(baseline and any(baseline.values()))}
        wf = [by_op[op]["wavefronts"] for op in OPS]
        ins = [by_op[op]["instructions"] for op in OPS]
        if None not in wf:
            rec["measured_wavefronts"] = sum(wf)
            rec["match"] = rec["measured_wavefronts"] == p.wavefronts
            rec["match_by_op"] = {op: by_op[op]["wavefronts"] == p.by_op[op].wavefronts for op in OPS}
        if None not in ins:
            rec["measured_instructions"] = sum(ins)
            rec["instructions_match"] = rec["measured_instructions"] == p.instructions_all
        if rec["measured_wavefronts"] is not None and p.wavefronts:
            rec["ratio"] = round(rec["measured_wavefronts"] / p.wavefronts, 4)
    return rec


def _metrics_by_key(raw: dict | None) -> dict | None:
    if raw is None:
        return None
    return {key: raw.get(metric) for key, metric in METRICS}


# --------------------------------------------------------------------------------------------
# Occupancy


def _attr(obj, name: str):
    value = getattr(obj, name)
    return value() if callable(value) else value


def occupancy_modules(arch: str) -> dict[int, object]:
    source = OCC_SOURCE_PATH.read_text()
    return {r: compile_module(source, f"tiling_occupancy_r{r}", arch=arch, defines={"NREG": max(1, r - 10)},
                              ptxas_options=(f"-maxrregcount={r}",))
            for r in REG_TARGETS}


def random_configs(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    configs = []
    while len(configs) < n:
        threads = rng.randint(1, 1024) if rng.random() < 0.2 else rng.choice(THREAD_CHOICES)
        target = rng.choice(REG_TARGETS)
        per_warp = -(-target * 32 // 256) * 256
        if per_warp * -(-threads // 128) * 4 > 65536 and rng.random() < 0.75:
            continue  # mostly skip shapes that cannot launch (a few stay: both sides should say 0)
        u = rng.random()
        if u < 0.25:
            smem = 0
        elif u < 0.6:
            smem = 4 * rng.randrange(0, 48 * 256)
        else:
            smem = 4 * rng.randrange(48 * 256, SMEM_OPTIN // 4 + 1)
        configs.append({"threads": threads, "register_target": target, "smem": smem})
    return configs


class DriverOccupancy:
    """cuda.core kernels of the occupancy module, one per register target, on the current device."""

    def __init__(self, modules: dict[int, object]):
        import torch
        from cuda.core import Device, ObjectCode

        self.device_index = torch.cuda.current_device()
        self.device = Device(self.device_index)
        self.device.set_current()
        self.kernels = {r: ObjectCode.from_cubin(m.cubin, name=m.label).get_kernel(OCC_KERNEL)
                        for r, m in modules.items()}

    def _set(self, kernel, smem: int, cluster: int) -> None:
        from cuda.bindings import driver

        attr = driver.CUfunction_attribute
        dev = driver.CUdevice(self.device_index)
        (err,) = driver.cuKernelSetAttribute(attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem,
                                             kernel.handle, dev)
        if int(err) != 0:
            raise RuntimeError(f"cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={smem}): {err}")
        if cluster > 8:
            (err,) = driver.cuKernelSetAttribute(attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1,
                                                 kernel.handle, dev)
            if int(err) != 0:
                raise RuntimeError(f"non-portable cluster size refused: {err}")

    def registers(self, target: int) -> int | None:
        try:
            return int(_attr(self.kernels[target].attributes, "num_regs"))
        except Exception:
            return None

    def blocks_per_sm(self, target: int, threads: int, smem: int) -> int:
        k = self.kernels[target]
        self._set(k, smem, 1)
        return int(k.occupancy.max_active_blocks_per_multiprocessor(threads, smem))

    def clusters(self, target: int, threads: int, smem: int, cluster: int, carveout: int = -1) -> int:
        """Max active clusters; ``carveout`` >= 0 sets the preferred shared-memory carveout (%)."""
        from cuda.bindings import driver
        from cuda.core import LaunchConfig

        k = self.kernels[target]
        self._set(k, smem, cluster)
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        (err,) = driver.cuKernelSetAttribute(attr, carveout, k.handle, driver.CUdevice(self.device_index))
        if int(err) != 0:
            raise RuntimeError(f"cuKernelSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT={carveout}): {err}")
        config = LaunchConfig(grid=(1, 1, 1), cluster=(cluster, 1, 1), block=threads, shmem_size=smem)
        return int(k.occupancy.max_active_clusters(config, stream=self.device.default_stream))


def occupancy_records(arch_calc: str, modules: dict, configs: list[dict], drv: DriverOccupancy | None):
    records = []
    for cfg in configs:
        usage = modules[cfg["register_target"]].resources[OCC_KERNEL]
        regs = usage.registers
        try:
            occ = occupancy(arch_calc, cfg["threads"], regs, cfg["smem"] + usage.static_smem_bytes)
        except InvalidArgumentError as exc:  # beyond this architecture's limits: predicted 0
            records.append({**cfg, "registers": regs, "predicted_blocks_per_sm": 0,
                            "predicted_error": str(exc), "measured_blocks_per_sm": None, "match": None})
            continue
        rec = {**cfg, "registers": regs, "spills": usage.spills, "smem_static": usage.static_smem_bytes,
               "predicted_blocks_per_sm": occ.blocks_per_sm, "predicted_limiting": list(occ.limiting),
               "predicted_occupancy": round(occ.occupancy, 4),
               "registers_driver": None, "measured_blocks_per_sm": None, "match": None, "error": None}
        if drv is not None:
            rec["registers_driver"] = drv.registers(cfg["register_target"])
            try:
                rec["measured_blocks_per_sm"] = drv.blocks_per_sm(cfg["register_target"], cfg["threads"],
                                                                  cfg["smem"])
                rec["match"] = rec["measured_blocks_per_sm"] == occ.blocks_per_sm
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"
                # a refused launch shape counts as 0 resident blocks
                rec["match"] = occ.blocks_per_sm == 0
        records.append(rec)
    return records


def cluster_records(arch_calc: str, modules: dict, drv: DriverOccupancy | None, sm_count: int | None):
    records = []
    configs = [(c, False) for c in CLUSTER_CONFIGS] + [(c, True) for c in CLUSTER_HELD_OUT]
    for (threads, target, smem), held_out in configs:
        usage = modules[target].resources[OCC_KERNEL]
        for p in CLUSTER_SIZES:
            occ = occupancy(arch_calc, threads, usage.registers, smem + usage.static_smem_bytes, cluster=p,
                            non_portable_cluster=p > 8)
            rec = {"threads": threads, "register_target": target, "registers": usage.registers, "smem": smem,
                   "cluster": p, "held_out": held_out, "predicted_blocks_per_sm": occ.blocks_per_sm,
                   "predicted_max_active_clusters": occ.max_active_clusters,
                   "measured_max_active_clusters": None, "match": None, "error": None}
            if drv is not None:
                try:
                    got = drv.clusters(target, threads, smem, p)
                    rec["measured_max_active_clusters"] = got
                    rec["measured_with_carveout_100"] = drv.clusters(target, threads, smem, p, 100)
                    rec["match"] = got == occ.max_active_clusters
                    if sm_count:
                        rec["measured_blocks_per_sm_equivalent"] = round(got * p / sm_count, 3)
                except Exception as exc:
                    rec["error"] = f"{type(exc).__name__}: {exc}"
            records.append(rec)
    return records


# --------------------------------------------------------------------------------------------
# Report


def summarize(patterns: list[dict], occ: list[dict], clusters: list[dict]) -> dict:
    def count(items, key):
        vals = [r.get(key) for r in items]
        return {"true": sum(v is True for v in vals), "false": sum(v is False for v in vals),
                "none": sum(v is None for v in vals)}

    addr = [r["address_check"]["ok"] if r["address_check"] else None for r in patterns]
    sass_ok = []
    for r in patterns:
        if r["sass"] is not None:
            sass_ok.append(r["sass"].get("LDS") == r["static_ops"]["load"]
                           and r["sass"].get("STS") == r["static_ops"]["store"])
    return {
        "patterns": len(patterns),
        "families": sorted({r["family"] for r in patterns}),
        "wavefront_match": count(patterns, "match"),
        "instruction_match": count(patterns, "instructions_match"),
        "address_check_ok": {"true": sum(a is True for a in addr), "false": sum(a is False for a in addr),
                             "none": sum(a is None for a in addr)},
        "host_address_check_ok": count(patterns, "host_address_check"),
        "sass_static_ops_match": {"true": sum(sass_ok), "false": len(sass_ok) - sum(sass_ok)},
        "occupancy_configs": len(occ),
        "occupancy_match": count(occ, "match"),
        "cluster_records": len(clusters),
        "cluster_match": count(clusters, "match"),
        "cluster_match_held_out": count([c for c in clusters if c.get("held_out")], "match"),
    }


def print_report(result: dict) -> None:
    s = result["summary"]
    print(f"\n{s['patterns']} patterns; wavefronts match {s['wavefront_match']}; instructions match "
          f"{s['instruction_match']}; addresses ok {s['address_check_ok']}; host check "
          f"{s['host_address_check_ok']}")
    fams: dict[str, list[dict]] = {}
    for r in result["patterns"]:
        fams.setdefault(r["family"], []).append(r)
    print(f"{'family':<20} {'n':>3} {'pred wf':>9} {'meas wf':>9} {'match':>6}")
    for fam, rs in fams.items():
        pred = sum(r["predicted_wavefronts"] for r in rs)
        meas = [r["measured_wavefronts"] for r in rs]
        meas_s = "-" if None in meas else str(sum(meas))
        ok = sum(r["match"] is True for r in rs)
        print(f"{fam:<20} {len(rs):>3} {pred:>9} {meas_s:>9} {ok:>3}/{len(rs)}")
    bad = [r for r in result["patterns"] if r["match"] is False or r["instructions_match"] is False]
    if bad:
        print("\nmismatches (pattern: predicted/measured wavefronts, instructions):")
        for r in bad[:40]:
            print(f"  {r['pattern']:<44} {r['predicted_wavefronts']:>6}/{r['measured_wavefronts']!s:<6} "
                  f"{r['instructions']:>5}/{r['measured_instructions']!s}")
    print(f"\noccupancy: {s['occupancy_configs']} configs, match {s['occupancy_match']}; clusters "
          f"{s['cluster_records']} records, match {s['cluster_match']} (held out: "
          f"{s['cluster_match_held_out']})")
    for r in [r for r in result["clusters"] if r["match"] is False][:20]:
        print(f"  cluster {r['cluster']:>2} threads {r['threads']:>4} regs {r['registers']:>3} smem "
              f"{r['smem']:>6}: predicted {r['predicted_max_active_clusters']} measured "
              f"{r['measured_max_active_clusters']} (carveout 100 %: {r.get('measured_with_carveout_100')})")
    for r in [r for r in result["occupancy"] if r["match"] is False][:20]:
        print(f"  threads {r['threads']:>4} regs {r['registers']:>3} smem {r['smem']:>6}: predicted "
              f"{r['predicted_blocks_per_sm']} measured {r['measured_blocks_per_sm']} {r['error'] or ''}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help=f"JSON output (default on the GPU: {DEFAULT_OUT}; "
                    "the dry run writes only where --out says)")
    ap.add_argument("--dry-run", action="store_true", help="generate, compile and predict; no GPU")
    ap.add_argument("--only", help="regex on pattern names or families")
    ap.add_argument("--arch", default="sm_90a", help="NVRTC target (default sm_90a, the H200)")
    ap.add_argument("--ncu", help="path to ncu (default: PATH, then /opt/nvidia/nsight-compute/*/ncu)")
    ap.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute (address checks only)")
    ap.add_argument("--ncu-timeout", type=int, default=420, help="seconds for the ncu run")
    ap.add_argument("--occupancy-configs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="copy the raw ncu CSV and driver JSON into this folder")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--driver-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.driver:
        return driver(args.only, args.driver_out or Path("tiling_driver.json"))

    t0 = time.time()
    pairs = build(args.only)
    kernels = [k for _, k in pairs]
    module = compile_suite(kernels, args.arch)
    missing = [k.name for k in kernels if k.name not in module.resources]
    if missing:
        raise SystemExit(f"ptxas reported no resources for {missing[:5]}")
    host = host_address_check(kernels)
    print(f"{len(kernels)} kernels generated and compiled for {args.arch} in {time.time() - t0:.1f} s; "
          f"host offset check: {host.get('skipped') or sum(host['ok'].values())}/{len(host['ok'])} ok")

    arch_calc = args.arch.rstrip("a")
    ncu_info: dict = {"skipped": "dry run" if args.dry_run else None}
    driver_report = None
    sass = None
    if not args.dry_run:
        with tempfile.TemporaryDirectory(prefix="tiling_validate_") as tmp:
            workdir = Path(tmp)
            ncu = None if args.no_ncu else find_ncu(args.ncu)
            if ncu is None:
                ncu_info = {"skipped": "--no-ncu" if args.no_ncu else "ncu not found"}
            else:
                print(f"profiling {len(kernels) + 1} kernels with {ncu} ...", flush=True)
                ncu_info = run_ncu(ncu, args.only, args.ncu_timeout, workdir)
                driver_report = ncu_info.pop("driver", None)
            if driver_report is None:
                driver_report = run_driver_plain(args.only, workdir, 600)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for f in workdir.iterdir():
                    shutil.copy(f, args.keep / f.name)
        sass = sass_counts(module.cubin)
    results = ncu_info.get("results") or {}
    baseline = _metrics_by_key(results.get(BASELINE_KERNEL))

    records = []
    for case, k in pairs:
        addr = None
        if driver_report is not None:
            addr = driver_report.get("kernels", {}).get(k.name)
        raw = results.get(k.name)
        records.append(pattern_record(case, k, module.resources.get(k.name), host["ok"].get(k.name),
                                      _metrics_by_key(raw) if raw is not None else None, baseline, addr,
                                      (sass or {}).get(k.name)))

    modules = occupancy_modules(args.arch)
    drv = sm_count = None
    if not args.dry_run:
        import torch

        if torch.cuda.is_available():
            drv = DriverOccupancy(modules)
            sm_count = torch.cuda.get_device_properties(drv.device_index).multi_processor_count
            major, minor = torch.cuda.get_device_capability(drv.device_index)
            arch_calc = f"sm_{major}{minor}"
    occ = occupancy_records(arch_calc, modules, random_configs(args.occupancy_configs, args.seed), drv)
    clusters = cluster_records(arch_calc, modules, drv, sm_count) if arch_calc == "sm_90" else []

    from smemkit.hw.environment import device_block, provenance

    ncu_info.pop("results", None)
    device = device_block()
    result = {
        "benchmark": "tiling_validate",
        "issue": 7,
        "provenance": provenance(device, None if argv is None else ["benchmarks/tiling_validate.py", *argv]),
        "dry_run": args.dry_run,
        "arch": args.arch,
        "calculator_arch": arch_calc,
        "device": device,
        "ncu": {**ncu_info, "metric_keys": dict(METRICS)},
        "driver_error": (driver_report or {}).get("error"),
        "baseline": {"kernel": BASELINE_KERNEL, "measured": baseline},
        "host_check": {k: v for k, v in host.items() if k != "ok"},
        "summary": {},
        "patterns": records,
        "occupancy": occ,
        "clusters": clusters,
        "seconds": None,
    }
    result["summary"] = summarize(records, occ, clusters)
    result["seconds"] = round(time.time() - t0, 1)
    out = args.out or (None if args.dry_run else DEFAULT_OUT)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}")
    print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
