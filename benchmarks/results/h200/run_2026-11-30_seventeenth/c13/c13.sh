#!/bin/bash
# s17 call 13: path='staged' with many host CTAs
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c13
# (the tree: c6/staged_path.patch applied on 313a657, without the HBM_LOAD variant)
timeout 400 python3 .branches/s17/e13.py $OUT/c13/e13.json > $OUT/c13/e13.log 2>&1; echo rc $?
tail -25 $OUT/c13/e13.log
