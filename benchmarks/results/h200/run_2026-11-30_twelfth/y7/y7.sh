#!/usr/bin/env bash
# Twelfth session, call 7: Nsight Compute on the 8K regs / cluster kernels (layernorm_bwd, softmax_bwd) and wvar_bwd 16K staged / cluster: the model's 8K misses.
set -u
O=$OUT/y7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y7 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
echo ncu=$NCU
timeout 300 $NCU --target-processes all -k regex:rr_ --launch-skip 0 --launch-count 18 --cache-control all --clock-control none \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  -o $O/k8 -f python3 .branches/s12/ncu_child.py > $O/ncu.log 2>&1; echo ncu rc=$? t=$(( $(date +%s)-S ))
$NCU -i $O/k8.ncu-rep --csv --page details > $O/k8_details.csv 2>>$O/ncu.log; echo csv rc=$?
cp .branches/s12/y7.sh .branches/s12/ncu_child.py $O/
tail -3 $O/ncu.log
python3 - $O/k8_details.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
want = ("Duration", "DRAM Throughput", "Memory Throughput", "Achieved Occupancy", "Registers Per Thread", "Block Limit Registers", "Block Limit Shared Mem", "Warp Cycles Per Issued Instruction", "Stall Long Scoreboard", "Issued Warp Per Scheduler", "No Eligible", "Theoretical Occupancy", "Waves Per SM")
by = collections.OrderedDict()
for r in rows:
    key = (r["ID"], r["Kernel Name"][:40])
    if r["Metric Name"] in want:
        by.setdefault(key, {})[r["Metric Name"]] = r["Metric Value"] + " " + r["Metric Unit"]
for (i, k), m in by.items():
    if int(i) % 3 == 2:
        print(i, k, "; ".join(f"{a}={b}" for a, b in m.items()))
PY
