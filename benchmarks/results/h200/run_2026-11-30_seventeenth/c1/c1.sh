#!/bin/bash
# s17 call 1 (as first run: the two GPU tests not yet run, then the L2-flush experiment; the
# second run, whose e1.json / e1.log these are, replaced the pytest line with `true` after
# fixing the read flush of e1.py, which the first run had called with an invalid out= argument)
set -x
export PYTHONPATH=$PWD/src:$PYTHONPATH
mkdir -p $OUT/c1
python3 -m pytest -q -m gpu "tests/gpu/test_reduction_gpu.py::test_reread_t512_whole_vector_path" "tests/gpu/test_offload_gpu.py::test_large_batch_ring_path_in_a_cuda_graph" -p no:cacheprovider > $OUT/c1/tests.log 2>&1; echo "pytest rc $?"
tail -3 $OUT/c1/tests.log
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv
python3 .branches/s17/e1.py $OUT/c1/e1.json 2>&1 | tee $OUT/c1/e1.log | tail -30
