#!/usr/bin/env bash
# Fifteenth session call 13: b6 (the looped re-read kernel unrolled, lars / pearson_bwd 4K).
set -u
O=$OUT/c13; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c13
timeout 300 python3 .branches/s15/b6.py --out $O/b6.json 2>&1 | grep -v Warn > $O/b6.log; echo rc=$?
grep -v "^check" $O/b6.log; grep "^check" $O/b6.log | awk '{print $2, $3, $5, $7}' | sort -k3 -g | tail -2
tar czf $O/drivers.tgz .branches/s15/c13.sh .branches/s15/b6.py
