#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c7
git diff -- src > $OUT/c7/stamps.patch
timeout 300 python3 .branches/s17/e7.py $OUT/c7/e7.json > $OUT/c7/e7.log 2>&1; echo rc $?
tail -20 $OUT/c7/e7.log
