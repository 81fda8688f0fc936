#!/usr/bin/env bash
# Thirteenth session, call 7: the persisting-L2 reset's effect on the ring, its copies and its GEMM (z7.py)
set -u
O=$OUT/z7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z7 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/s13/z7.py $O/z7.json > $O/z7.log 2>&1; echo z7 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z7.sh .branches/s13/z7.py $O/
grep -v Warning $O/z7.log | tail -12
