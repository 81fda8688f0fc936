#!/bin/bash
# s17 call 12: the runtime GPU tests after the review mends (flush test renamed, alternating order), three processes
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c12
for i in 1 2 3; do python3 -m pytest -q -s -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider 2>&1 | grep -E "passed|failed|'fill'|Error|assert"; done > $OUT/c12/runtime-tests.log
cat $OUT/c12/runtime-tests.log
