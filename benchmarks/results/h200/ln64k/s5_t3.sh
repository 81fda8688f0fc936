#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 400 python3 .branches/gcol_ab.py $O/gcol_ab.json > $O/gcol_ab.log 2>&1; echo gcol rc=$?
tail -n 12 $O/gcol_ab.log | cut -c1-1200
cd $OUT && tar czf s5t3.tgz s5t3 && rm -rf s5t3
