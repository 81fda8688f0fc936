#!/bin/bash
# s17 call 1: the two GPU tests not yet run, then the L2-flush experiment
set -x
export PYTHONPATH=$PWD/src:$PYTHONPATH
mkdir -p $OUT/c1
true
tail -3 $OUT/c1/tests.log
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv
python3 .branches/s17/e1.py $OUT/c1/e1.json 2>&1 | tee $OUT/c1/e1.log | tail -30
