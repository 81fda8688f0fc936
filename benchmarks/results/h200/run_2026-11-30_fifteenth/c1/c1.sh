#!/usr/bin/env bash
# Fifteenth session call 1: b1 (issue 5 batch-512 rounds) and b2 (issue 3 lars 4K/8K experiments).
set -u
O=$OUT/c1; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
SMEMKIT_CACHE_DIR=/tmp/c-b2 timeout 200 python3 .branches/s15/b2.py --out $O/b2.json > $O/b2.log 2>&1; echo b2 rc=$?
SMEMKIT_CACHE_DIR=/tmp/c-b1 timeout 240 python3 .branches/s15/b1.py --out $O/b1.json > $O/b1.log 2>&1; echo b1 rc=$?
cp .branches/s15/*.sh .branches/s15/*.py $O/ 2>/dev/null; cd $O && tar czf drivers.tgz *.sh *.py && rm -f *.sh *.py; cd - >/dev/null
grep -v Warning $O/b1.log | tail -10
grep -v Warning $O/b2.log | grep -v "^check" | tail -24
grep "^check" $O/b2.log | awk '{print $3, $5, $7}' | sort -k2 -g | tail -3
