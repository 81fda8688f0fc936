#!/usr/bin/env bash
# Fourteenth session, call 2: the HBM/host boundary's alignment and the ring at the large shapes (a2.py)
set -u
O=$OUT/a2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-a2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 500 python3 .branches/s14/a2.py --out $O/a2.json > $O/a2.log 2>&1; echo a2 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/a2.sh .branches/s14/a2.py $O/
grep -v Warning $O/a2.log | cut -c1-220 | tail -100
