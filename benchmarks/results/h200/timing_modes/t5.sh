#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/history.py $O/history.json > $O/history.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/history.log | head -3
tail -n 20 $O/history.log
cp .branches/history.py .branches/t5.sh $O/
cd $OUT && tar czf s6t5.tgz s6t5 && rm -rf s6t5
