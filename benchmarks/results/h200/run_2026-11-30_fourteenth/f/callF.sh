#!/usr/bin/env bash
# Fourteenth session call F: the evict_last timing test that failed in call E (ratios 0.41, 0.45, 1.00), alone in two processes and after the new reset-switch test in a third; the full GPU suite; a second offload benchmark from main.
set -u
O=$OUT/f; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-f PYTHONPATH=$PWD/src
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv > $O/smi.txt 2>&1
T=tests/gpu/test_runtime_gpu.py
for i in 1 2; do python3 -m pytest -q -p no:cacheprovider "$T::test_a_timing_does_not_find_data_an_earlier_kernel_kept_in_l2" > $O/keep_alone_$i.log 2>&1; echo alone $i rc=$?; grep -E "^E .*ratio|assert|passed|failed" $O/keep_alone_$i.log | head -3; done
python3 -m pytest -q -p no:cacheprovider "$T::test_a_timing_without_the_reset_leaves_the_persisting_lines_alone" "$T::test_a_timing_does_not_find_data_an_earlier_kernel_kept_in_l2" > $O/keep_after.log 2>&1; echo after rc=$?; grep -E "^E |passed|failed" $O/keep_after.log | head -3
echo t=$(( $(date +%s)-S ))
python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo suite rc=$? t=$(( $(date +%s)-S )); tail -1 $O/gpu-tests.log; grep -E "^FAILED" $O/gpu-tests.log | head
timeout 240 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo ops rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/callF.sh $O/
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/f/offload_ops.json"))
sm = [r for r in d["records"] if r["method"] == "smemkit" and r["r_actual"] > 0]
print("<=1.12x", sum(r["ms_over_ideal"] <= 1.12 for r in sm), "of", len(sm), "B_h", round(d["links"]["B_h_gbps"], 1))
PY
cd $O && tar czf logs.tgz *.log smi.txt && rm -f keep_*.log smi.txt offload_ops.log
