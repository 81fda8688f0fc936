#!/usr/bin/env bash
# Fifteenth session call 6: evl.py timed as graph replays (launch timing of a 32 MB read measured
# host latency in c5): reset on / off alternating, three fresh processes each.
set -u
O=$OUT/c6; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c6
i=0
for rep in 1 2 3; do for rs in 1 0; do
  i=$((i+1)); timeout 60 python3 .branches/s15/evl.py --graph 1 --prewarm 0 --reset $rs --out $O/evl_${i}_g1_r${rs}.json 2>&1 | grep -v Warn
done; done
cd $O && tar czf evl.tgz *.json && rm -f *.json; cd - > /dev/null
tar czf $O/drivers.tgz .branches/s15/c6.sh .branches/s15/evl.py
