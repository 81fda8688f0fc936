#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 540 python3 .branches/refill_ab.py $O/refill_ab.json > $O/refill_ab.log 2>&1; echo ab rc=$?
grep -v "^best" $O/refill_ab.log | grep -i "error\|Traceback" | head -5
tail -n 32 $O/refill_ab.log
cp .branches/refill_ab.py .branches/t1.sh $O/
cd $OUT && tar czf s6t1.tgz s6t1 && rm -rf s6t1
