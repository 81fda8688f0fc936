#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c9
timeout 200 python3 .branches/s17/e9.py $OUT/c9/e9.json > $OUT/c9/e9.log 2>&1; echo rc $?
tail -8 $OUT/c9/e9.log
