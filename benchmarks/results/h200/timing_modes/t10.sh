#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t10; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/flush_modes.py $O/flush_modes.json > $O/flush_modes.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/flush_modes.log | head -3
tail -n 14 $O/flush_modes.log
cp .branches/flush_modes.py .branches/t10.sh $O/
cd $OUT && tar czf s6t10.tgz s6t10 && rm -rf s6t10
