#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/realloc.py $O/realloc.json > $O/realloc.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/realloc.log | head -3
tail -n 20 $O/realloc.log
cp .branches/realloc.py .branches/t7.sh $O/
cd $OUT && tar czf s6t7.tgz s6t7 && rm -rf s6t7
