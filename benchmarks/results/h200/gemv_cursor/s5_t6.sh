#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
PYTHONPATH=$PWD/src:$PWD/benchmarks timeout 200 python3 -m pytest -q tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$?
tail -n 3 $O/gpu-tests-offload.log
PYTHONPATH=$PWD/src timeout 100 python3 .branches/gemv_ab.py new $O/gemv_new.json > $O/gemv_new.log 2>&1; echo new rc=$?
PYTHONPATH=$PWD/.branches/old/src timeout 100 python3 .branches/gemv_ab.py old $O/gemv_old.json > $O/gemv_old.log 2>&1; echo old rc=$?
GEMV_MIN_CTAS=3,3,2,1 PYTHONPATH=$PWD/src timeout 100 python3 .branches/gemv_ab.py new_m3 $O/gemv_new_m3.json > $O/gemv_new_m3.log 2>&1; echo m3 rc=$?
PYTHONPATH=$PWD/src:$PWD/benchmarks timeout 120 python3 .branches/ncu_gemv.py $O/ncu_gemv.json > $O/ncu_gemv.log 2>&1; echo ncu rc=$?
paste -d'|' <(cut -c1-60 $O/gemv_old.log) <(cut -c5-50 $O/gemv_new.log) <(cut -c8-50 $O/gemv_new_m3.log) | grep "r=0.0:\|r=0.0125" | tail -n 24
grep -v "^==PROF==\|^==WARNING" $O/ncu_gemv.log | cut -c1-120 | tail -n 16
cd $OUT && tar czf s5t6.tgz s5t6 && rm -rf s5t6
