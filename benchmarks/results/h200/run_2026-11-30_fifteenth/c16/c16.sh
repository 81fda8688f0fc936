#!/usr/bin/env bash
# Fifteenth session call 16: b9 (reread_t512 with a whole-vector fast path, lars 4K / 8K, pearson_bwd 4K).
set -u
O=$OUT/c16; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c16
timeout 300 python3 .branches/s15/b9.py --out $O/b9.json 2>&1 | grep -v Warn > $O/b9.log; echo rc=$?
grep -v "^check" $O/b9.log; grep "^check" $O/b9.log | awk '{print $2, $3, $5, $7}' | sort -k3 -g | tail -2
tar czf $O/drivers.tgz .branches/s15/c16.sh .branches/s15/b9.py
