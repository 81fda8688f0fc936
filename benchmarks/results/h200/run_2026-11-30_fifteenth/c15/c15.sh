#!/usr/bin/env bash
# Fifteenth session call 15: b8 (reread_t512 with Triton's load and store instructions, lars 4K / 8K, pearson_bwd 4K).
set -u
O=$OUT/c15; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c15
timeout 300 python3 .branches/s15/b8.py --out $O/b8.json 2>&1 | grep -v Warn > $O/b8.log; echo rc=$?
grep -v "^check" $O/b8.log; grep "^check" $O/b8.log | awk '{print $2, $3, $5, $7}' | sort -k3 -g | tail -2
tar czf $O/drivers.tgz .branches/s15/c15.sh .branches/s15/b8.py
