#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/ncu_gemv.py $O/ncu_gemv.json > $O/ncu_gemv.log 2>&1; echo ncu rc=$?
timeout 270 python3 .branches/threads_ab.py $O/threads_ab.json > $O/threads_ab.log 2>&1; echo threads rc=$?
grep -v "^==PROF==\|^==WARNING" $O/ncu_gemv.log | cut -c1-400 | tail -n 14
tail -n 19 $O/threads_ab.log
cd $OUT && tar czf s5t4.tgz s5t4 && rm -rf s5t4
