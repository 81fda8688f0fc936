#!/usr/bin/env bash
# Tenth session, call 2: the shared-memory carveout left by the previous kernel, and the preference.
set -u
O=$OUT/w2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/s10/carve.py $O/carve.json > $O/carve.log 2>&1; echo carve rc=$? t=$(( $(date +%s)-S ))
cp .branches/s10/carve.py .branches/s10/w2.sh $O/; cat $O/carve.log | tail -40
