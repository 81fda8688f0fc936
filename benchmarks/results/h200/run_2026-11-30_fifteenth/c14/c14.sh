#!/usr/bin/env bash
# Fifteenth session call 14: b7 (the looped re-read kernel at full occupancy, lars / pearson_bwd 4K).
set -u
O=$OUT/c14; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c14
timeout 300 python3 .branches/s15/b7.py --out $O/b7.json 2>&1 | grep -v Warn > $O/b7.log; echo rc=$?
grep -v "^check" $O/b7.log; grep "^check" $O/b7.log | awk '{print $2, $3, $5, $7}' | sort -k3 -g | tail -2
tar czf $O/drivers.tgz .branches/s15/c14.sh .branches/s15/b7.py
