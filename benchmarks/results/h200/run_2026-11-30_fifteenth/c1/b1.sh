#!/usr/bin/env bash
# Fifteenth session call: issue 5's batch-512 bar in alternating rounds (b1.py), ~1.5 min.
set -u
O=$OUT/b1; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-b1 PYTHONPATH=$PWD/src
timeout 240 python3 .branches/s15/b1.py --out $O/b1.json > $O/b1.log 2>&1; echo b1 rc=$?
cp .branches/s15/b1.sh .branches/s15/b1.py $O/
grep -v Warning $O/b1.log | tail -12
