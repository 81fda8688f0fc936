"""Nsight Compute: the split GEMV kernel's HBM stream (path='kernel' at r = 0 and at r ~ r*) vs
cuBLAS (F.linear, all rows in HBM), batch 1 and 8, 4096x14336 and 8192x28672 bf16. One-off driver:
`python ncu_gemv.py OUT.json`."""
import json, subprocess, sys, tempfile
from pathlib import Path

METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
           "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
           "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
           "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
           "smsp__inst_executed.sum")
CASES = [((4096, 14336), 1), ((4096, 14336), 8), ((8192, 28672), 1), ((8192, 28672), 8)]


def driver():
    import torch
    import torch.nn.functional as F
    from smemkit.offload.gemv import split_linear
    from smemkit.offload.pinned import SplitWeight
    calls, keep = [], []
    for (n, k), b in CASES:
        w = (torch.randn(n, k, device="cuda") * k ** -0.5).to(torch.bfloat16)
        x = torch.randn(b, k, device="cuda").to(torch.bfloat16)
        for ratio in (0.0, 0.0125):
            sw = SplitWeight(w, ratio)
            keep.append(sw)
            split_linear(x, sw, path="kernel")
            calls.append(lambda x=x, sw=sw: split_linear(x, sw, path="kernel"))
        F.linear(x, w)
        calls.append(lambda x=x, w=w: F.linear(x, w))
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for c in calls:
        c()
        torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main(out):
    from smemkit.hw import ncu
    from smemkit.runtime.paths import find_tool
    exe = find_tool("ncu")
    with tempfile.TemporaryDirectory() as tmp:
        rep = Path(tmp) / "r.ncu-rep"
        for metrics in (METRICS, METRICS[:12]):
            cmd = [exe, "--metrics", ",".join(metrics), "--clock-control", "none", "--profile-from-start", "off",
                   "--target-processes", "all", "--export", str(rep), "--force-overwrite",
                   sys.executable, __file__, "--driver"]
            if subprocess.run(cmd, timeout=250).returncode == 0:
                break
            print("ncu refused", len(metrics), "metrics", flush=True)
        recs = ncu.read_report(rep, ncu=exe)
    rows = [{"kernel": r.kernel[:90], **{m: r.value(m) for m in METRICS}} for r in recs]
    Path(out).write_text(json.dumps({"cases": CASES, "records": rows}, indent=1) + "\n")
    for r in rows:
        st = {m.split("stalled_")[1].split("_per")[0][:10]: round(r[m], 2) for m in METRICS if "stalled" in m and r[m]}
        print(r["kernel"][:40], "us", round((r["gpu__time_duration.sum"] or 0) / 1e3, 1),
              "dram%", r["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
              "warps%", r["sm__warps_active.avg.pct_of_peak_sustained_active"],
              "issue%", r["smsp__issue_active.avg.pct_of_peak_sustained_active"],
              "grid", r["launch__grid_size"], "blk", r["launch__block_size"], "regs", r["launch__registers_per_thread"],
              st, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--driver":
        driver()
    else:
        main(sys.argv[1])
