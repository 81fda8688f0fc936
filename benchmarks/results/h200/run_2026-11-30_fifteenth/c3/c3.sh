#!/usr/bin/env bash
# Fifteenth session call 3: b4 (issue 3 lars 4K/8K: w and g held, v late or in shared memory).
set -u
O=$OUT/c3; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
SMEMKIT_CACHE_DIR=/tmp/c-b4 timeout 300 python3 .branches/s15/b4.py --out $O/b4.json > $O/b4.log 2>&1; echo b4 rc=$?
tar czf $O/drivers.tgz .branches/s15/c3.sh .branches/s15/b4.py .branches/s15/b3.py
grep -v Warning $O/b4.log | grep -v "^check" | tail -20
grep "^check" $O/b4.log | awk '{print $3, $5, $7}' | sort -k2 -g | tail -3
