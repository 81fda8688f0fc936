"""Nsight Compute at 4K: smemkit's regs / staged kernels vs our hand-written Triton kernel (its
whole-row-in-registers path) and torch.compile's. One-off driver: `python ncu_4k.py OUT.json`."""
import json, subprocess, sys, tempfile
from pathlib import Path

POINTS = (("softmax_bwd", 4096, 4096, ("regs_t256", "staged")), ("layernorm_bwd", 2048, 4096, ("regs_t256",)),
          ("lars", 4096, 4096, ("staged", "regs_t256")),
          ("pearson_bwd", 4096, 4096, ("staged", "regs_t256")))
METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "lts__t_sector_hit_rate.pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
           "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
           "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
           "smsp__inst_executed.sum", "launch__occupancy_limit_warps",
           "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio")


def driver():
    import torch
    from smemkit.reduction import BUILTIN, run
    from smemkit.reduction.eager import EAGER
    from smemkit.reduction.workloads import example_inputs
    calls = []
    for name, M, N, ours in POINTS:
        t, s = example_inputs(name, M, N, device="cuda")
        f = torch.compile(EAGER[name], dynamic=False)
        for _ in range(3):
            f(t, s)
        calls.append(lambda f=f, t=t, s=s: f(t, s))
        from triton_baselines import TRITON
        tf = TRITON[name]
        for _ in range(3):
            tf(t, s)
        calls.append(lambda tf=tf, t=t, s=s: tf(t, s))
        for v in ours:
            run(BUILTIN[name], t, s, variant=v)
            calls.append(lambda name=name, t=t, s=s, v=v: run(BUILTIN[name], t, s, variant=v))
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
        for metrics in (METRICS, METRICS[:7]):
            cmd = [exe, "--metrics", ",".join(metrics), "--clock-control", "none", "--profile-from-start", "off",
                   "--target-processes", "all", "--export", str(rep), "--force-overwrite",
                   sys.executable, __file__, "--driver"]
            if subprocess.run(cmd, timeout=300).returncode == 0:
                break
            print("ncu refused", len(metrics), "metrics", flush=True)
        recs = ncu.read_report(rep, ncu=exe)
    rows = [{"kernel": r.kernel[:90], **{m: r.value(m) for m in METRICS}} for r in recs]
    Path(out).write_text(json.dumps({"points": POINTS, "records": rows}, indent=1) + "\n")
    for r in rows:
        d = r["gpu__time_duration.sum"]; rd = r["dram__bytes_read.sum"]; wr = r["dram__bytes_write.sum"]
        short = {m.split("__")[1][:28]: (round(v, 2) if isinstance(v, float) else v) for m, v in r.items()
                 if m not in ("kernel",) and v is not None}
        print(r["kernel"][:60], short, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--driver":
        driver()
    else:
        main(sys.argv[1])
