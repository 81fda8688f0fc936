#!/usr/bin/env bash
# Ninth session, call 8: the close calls head to head, in alternating rounds.
set -u
O=$OUT/v8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v8 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 200 python3 .branches/s9/h2h.py $O/h2h.json > $O/h2h.log 2>&1; echo h2h rc=$? t=$(( $(date +%s)-S ))
cp .branches/s9/h2h.py .branches/s9/v8.sh $O/; cat $O/h2h.log | tail -9
