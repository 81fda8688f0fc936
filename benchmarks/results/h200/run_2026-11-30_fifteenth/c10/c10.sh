#!/usr/bin/env bash
# Fifteenth session call 10: selfleak.py (a kernel's own evict_last lines through the per-repetition flush?).
set -u
O=$OUT/c10; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c10
timeout 400 python3 .branches/s15/selfleak.py --out $O/selfleak.json 2>&1 | grep -v Warn | tee $O/selfleak.log
tar czf $O/drivers.tgz .branches/s15/c10.sh .branches/s15/selfleak.py
