#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
PYTHONPATH=$PWD/src:$PWD/benchmarks timeout 200 python3 -m pytest -q tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$?
tail -n 6 $O/gpu-tests-offload.log
PYTHONPATH=$PWD/src timeout 120 python3 .branches/gemv_ab.py new $O/gemv_new.json > $O/gemv_new.log 2>&1; echo new rc=$?
PYTHONPATH=$PWD/.branches/old/src timeout 120 python3 .branches/gemv_ab.py old $O/gemv_old.json > $O/gemv_old.log 2>&1; echo old rc=$?
PYTHONPATH=$PWD/src:$PWD/benchmarks timeout 150 python3 .branches/ncu_gemv.py $O/ncu_gemv.json > $O/ncu_gemv.log 2>&1; echo ncu rc=$?
paste -d'|' <(cut -c1-70 $O/gemv_old.log) <(cut -c1-70 $O/gemv_new.log) | tail -n 48
grep -v "^==PROF==\|^==WARNING" $O/ncu_gemv.log | cut -c1-200 | tail -n 16
cd $OUT && tar czf s5t5.tgz s5t5 && rm -rf s5t5
