"""Does Nsight Compute keep one value per SM for the counters the atomics model reads?

Issue 6 wants U = X·S per SM from counter instances, not only the ``.sum`` rollup. The CSV export
with ``--print-metric-instances values`` gave plain rollups for our metrics (the H200 histogram
report of commit cb352a7). This probe
profiles one launch of a shared-atomic histogram (``torch.bincount`` on 256 bins) with several
spellings of the same counters and records, for each, what the report holds: the value, and
through Nsight Compute's own Python module (``extras/python/ncu_report.py``) the number of
instances, their correlation ids and values. It writes everything to ``--out`` (JSON) and prints
a short table; nothing here is assumed to work.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from smemkit.hw.environment import device_block, provenance

SPELLINGS = (
    "sm__cycles_active.sum",
    "sm__cycles_active.max",
    "smsp__inst_executed_op_shared_atom.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "sm__ctas_launched.sum",
    "sm__cycles_active",
    "smsp__inst_executed_op_shared_atom",
)


def child() -> None:
    """One profiled launch: a 256-bin histogram of 2^24 keys (shared-memory atomics)."""
    import torch

    keys = torch.randint(0, 256, (1 << 24,), device="cuda", dtype=torch.int64)
    torch.cuda.synchronize()
    torch.bincount(keys, minlength=256)
    torch.cuda.synchronize()


def find_ncu_report_module() -> str | None:
    """The folder holding ``ncu_report.py`` in the installed Nsight Compute, if any."""
    patterns = ("/usr/local/cuda*/nsight-compute*/extras/python/ncu_report.py",
                "/opt/nvidia/nsight-compute/*/extras/python/ncu_report.py",
                "/usr/local/NVIDIA-Nsight-Compute*/extras/python/ncu_report.py")
    for pattern in patterns:
        hits = sorted(glob.glob(pattern))
        if hits:
            return str(Path(hits[-1]).parent)
    return None


def instances(report: str, module_dir: str) -> dict[str, dict]:
    """Every metric of every launch in ``report``: value, instance count, first instances."""
    sys.path.insert(0, module_dir)
    import ncu_report  # type: ignore[import-not-found]

    found: dict[str, dict] = {}
    context = ncu_report.load_report(report)
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            for name in action.metric_names():
                metric = action.metric_by_name(name)
                n = metric.num_instances()
                entry: dict = {"kernel": action.name(), "value": _value(metric), "instances": n}
                if n:
                    entry["first_values"] = [_value(metric, i) for i in range(min(n, 8))]
                    if metric.has_correlation_ids():
                        ids = metric.correlation_ids()
                        entry["first_ids"] = [_value(ids, i) for i in range(min(n, 8))]
                found[name] = entry
    return found


def _value(metric, index: int | None = None):
    try:
        return metric.as_double() if index is None else metric.as_double(index)
    except Exception as error:  # noqa: BLE001 - the probe records what the module does
        return f"error: {error}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return 0
    ncu = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
    module_dir = find_ncu_report_module()
    device = device_block()
    result: dict = {"provenance": provenance(device), "device": device, "ncu": ncu,
                    "ncu_report_module": module_dir, "spellings": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for spelling in SPELLINGS:
            report = os.path.join(tmp, spelling.replace(".", "_"))
            cmd = [ncu, "--metrics", spelling, "--clock-control", "none", "--kernel-name",
                   "regex:.*", "--launch-count", "1", "--export", report, "--force-overwrite",
                   sys.executable, __file__, "--out", str(args.out), "--child"]
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            entry: dict = {"rc": run.returncode, "stderr_tail": run.stderr[-600:]}
            if run.returncode == 0 and os.path.exists(report + ".ncu-rep"):
                csv = subprocess.run([ncu, "--import", report + ".ncu-rep", "--csv", "--page",
                                      "raw", "--print-metric-instances", "details"],
                                     capture_output=True, text=True, timeout=60)
                entry["csv_details"] = csv.stdout[-2000:]
                if module_dir:
                    try:
                        entry["report"] = instances(report + ".ncu-rep", module_dir)
                    except Exception as error:  # noqa: BLE001
                        entry["report_error"] = repr(error)
            result["spellings"][spelling] = entry
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    for spelling, entry in result["spellings"].items():
        hits = {k: v.get("instances") for k, v in entry.get("report", {}).items()
                if "__" in k and not k.startswith(("device__", "launch__"))}
        print(f"{spelling:58s} rc={entry['rc']} instances={hits}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
