#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c10
for i in 1 2 3; do python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider 2>&1 | tail -2; done > $OUT/c10/runtime-tests.log
cat $OUT/c10/runtime-tests.log
python3 - <<'PY' 2>&1 | tee $OUT/c10/flush_times.log
import sys; sys.path.insert(0, "tests/gpu")
from test_runtime_gpu import flush_times
for _ in range(3): print({k: round(v * 1e3, 1) for k, v in flush_times().items()})
PY
