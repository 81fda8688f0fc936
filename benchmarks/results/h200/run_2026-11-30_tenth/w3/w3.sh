#!/usr/bin/env bash
# Tenth session, call 3: evict_last lines through the L2 flush.
set -u
O=$OUT/w3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/s10/evl.py $O/evl.json > $O/evl.log 2>&1; echo evl rc=$? t=$(( $(date +%s)-S ))
cp .branches/s10/evl.py .branches/s10/w3.sh $O/; cat $O/evl.log | tail -30
