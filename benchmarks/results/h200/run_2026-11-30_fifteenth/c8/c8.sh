#!/usr/bin/env bash
# Fifteenth session call 8: leak.py (do evict_last lines from an earlier kernel reach a later
# flushed timing without the reset?), two fresh processes.
set -u
O=$OUT/c8; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c8
for i in 1 2; do timeout 200 python3 .branches/s15/leak.py --out $O/leak_$i.json 2>&1 | grep -v Warn | tee $O/leak_$i.log; done
tar czf $O/drivers.tgz .branches/s15/c8.sh .branches/s15/leak.py
