#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 400 python3 .branches/addr_diag.py $O/addr_diag.json > $O/addr_diag.log 2>&1; echo diag rc=$?
tail -n 12 $O/addr_diag.log | cut -c1-400
cp .branches/addr_diag.py .branches/t2.sh $O/
cd $OUT && tar czf s6t2.tgz s6t2 && rm -rf s6t2
