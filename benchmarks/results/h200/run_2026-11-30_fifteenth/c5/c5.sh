#!/usr/bin/env bash
# Fifteenth session call 5: the evict_last timing test's measurement in fresh processes (evl.py):
# pre-warm 0 / 1000 ms x reset on / off, alternating, two processes each.
set -u
O=$OUT/c5; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c5
i=0
for rep in 1 2; do for pw in 0 1000; do for rs in 1 0; do
  i=$((i+1)); timeout 60 python3 .branches/s15/evl.py --prewarm $pw --reset $rs --out $O/evl_${i}_pw${pw}_r${rs}.json 2>&1 | grep -v Warn
done; done; done
cd $O && tar czf evl.tgz *.json && rm -f *.json; cd - > /dev/null
tar czf $O/drivers.tgz .branches/s15/c5.sh .branches/s15/evl.py
