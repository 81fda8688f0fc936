#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 300 python3 .branches/place_sweep.py $O/place_sweep.json > $O/place_sweep.log 2>&1; echo sweep rc=$?
grep -i "error\|traceback" $O/place_sweep.log | head -3
tail -n 6 $O/place_sweep.log
grep "fixed" $O/place_sweep.log | cut -c1-150
cp .branches/place_sweep.py .branches/t4.sh $O/
cd $OUT && tar czf s6t4.tgz s6t4 && rm -rf s6t4
