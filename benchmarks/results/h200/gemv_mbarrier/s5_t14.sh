#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t14; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src GEMV_AB_BATCHES=1,8,16 GEMV_AB_RATIOS=0,0.0125
nvidia-smi --query-gpu=name,uuid --format=csv > $O/smi.txt
timeout 80 python3 .branches/gemv_ab.py mt1 $O/gemv_mt1.json > $O/gemv_mt1.log 2>&1; echo mt1 rc=$?
GEMV_HBM_MT=2,2,2,2 timeout 80 python3 .branches/gemv_ab.py mt2 $O/gemv_mt2.json > $O/gemv_mt2.log 2>&1; echo mt2 rc=$?
paste -d'|' <(cut -c1-60 $O/gemv_mt1.log) <(cut -c5-40 $O/gemv_mt2.log)
cd $OUT && tar czf s5t14.tgz s5t14 && rm -rf s5t14
