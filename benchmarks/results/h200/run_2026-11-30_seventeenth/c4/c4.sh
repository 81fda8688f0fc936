#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c4
timeout 300 python3 .branches/s17/e4.py $OUT/c4/e4.json 2>&1 | tee $OUT/c4/e4.log | tail -45
