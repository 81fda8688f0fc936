#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 GEMV_AB_BATCHES=64,8 GEMV_AB_RATIOS=0.05,1.0
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
for rep in 1 2; do
PYTHONPATH=$PWD/src timeout 100 python3 .branches/gemv_ab.py new $O/gemv_new_$rep.json > $O/gemv_new_$rep.log 2>&1; echo new rc=$?
PYTHONPATH=$PWD/.branches/old/src timeout 100 python3 .branches/gemv_ab.py old $O/gemv_old_$rep.json > $O/gemv_old_$rep.log 2>&1; echo old rc=$?
done
paste -d'|' <(cut -c1-58 $O/gemv_old_1.log) <(cut -c5-40 $O/gemv_new_1.log) <(cut -c5-40 $O/gemv_old_2.log) <(cut -c5-40 $O/gemv_new_2.log)
cd $OUT && tar czf s5t8.tgz s5t8 && rm -rf s5t8
