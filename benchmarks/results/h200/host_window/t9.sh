#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t9; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/host_window.py $O/host_window.json > $O/host_window.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/host_window.log | head -3
tail -n 18 $O/host_window.log
cp .branches/host_window.py .branches/t9.sh $O/
cd $OUT && tar czf s6t9.tgz s6t9 && rm -rf s6t9
