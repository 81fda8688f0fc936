#!/usr/bin/env bash
# Thirteenth session, call 8: the reset's effect on the ring in a rebuilt benchmark context (z8.py)
set -u
O=$OUT/z8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z8 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/s13/z8.py $O/z8.json > $O/z8.log 2>&1; echo z8 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z8.sh .branches/s13/z8.py $O/
grep -v Warning $O/z8.log | tail -40
