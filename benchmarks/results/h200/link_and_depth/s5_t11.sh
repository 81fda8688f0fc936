#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t11; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid --format=csv > $O/smi.txt
timeout 120 python3 .branches/ce_probe.py $O/ce_probe.json > $O/ce_probe.log 2>&1; echo rc=$?
cat $O/ce_probe.log
for d in 2 3 4; do
GEMV_HBM_DEPTH=$d GEMV_AB_BATCHES=1,8 GEMV_AB_RATIOS=0,0.0125 timeout 80 python3 .branches/gemv_ab.py depth$d $O/gemv_depth$d.json > $O/gemv_depth$d.log 2>&1; echo depth$d rc=$?
done
paste -d'|' <(cut -c1-62 $O/gemv_depth2.log) <(cut -c8-44 $O/gemv_depth3.log) <(cut -c8-44 $O/gemv_depth4.log)
cd $OUT && tar czf s5t11.tgz s5t11 && rm -rf s5t11
