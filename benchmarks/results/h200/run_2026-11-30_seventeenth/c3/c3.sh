#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c3
python3 .branches/s17/e3.py $OUT/c3/e3.json 2>&1 | tee $OUT/c3/e3.log | tail -25
