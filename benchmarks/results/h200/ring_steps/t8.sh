#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/ring_steps.py $O/ring_steps.json > $O/ring_steps.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/ring_steps.log | head -3
tail -n 66 $O/ring_steps.log
cp .branches/ring_steps.py .branches/t8.sh $O/
cd $OUT && tar czf s6t8.tgz s6t8 && rm -rf s6t8
