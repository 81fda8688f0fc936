#!/usr/bin/env bash
# Fifteenth session call 11: b5 (the ring's chunk GEMMs on a high-priority stream, batch 512).
set -u
O=$OUT/c11; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c11
timeout 400 python3 .branches/s15/b5.py --out $O/b5.json 2>&1 | grep -v Warn | tee $O/b5.log | tail -12
tar czf $O/drivers.tgz .branches/s15/c11.sh .branches/s15/b5.py
