#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t10; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 200 python3 .branches/occ2.py $O/occ2.json > $O/occ2.log 2>&1; echo rc=$?
tail -n 14 $O/occ2.log
cd $OUT && tar czf t10.tgz t10 && rm -rf t10
