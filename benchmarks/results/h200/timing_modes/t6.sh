#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/alloc_sweep.py $O/alloc_sweep.json > $O/alloc_sweep.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/alloc_sweep.log | head -3
tail -n 20 $O/alloc_sweep.log
cp .branches/alloc_sweep.py .branches/t6.sh $O/
cd $OUT && tar czf s6t6.tgz s6t6 && rm -rf s6t6
