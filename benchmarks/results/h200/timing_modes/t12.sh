#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t12; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/prealloc_bench.py $O/prealloc_bench.json > $O/prealloc_bench.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/prealloc_bench.log | head -3
tail -n 24 $O/prealloc_bench.log
cp .branches/prealloc_bench.py .branches/t12.sh $O/
cd $OUT && tar czf s6t12.tgz s6t12 && rm -rf s6t12
