#!/usr/bin/env bash
# Fifteenth session call 9: the rewritten evict_last timing test, first processes on the machine,
# three times; its measurement with the reset on / off (negcheck.py), two each; the runtime GPU tests.
set -u
O=$OUT/c9; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c9
T=tests/gpu/test_runtime_gpu.py::test_a_timing_does_not_find_data_an_earlier_kernel_kept_in_l2
for i in 1 2 3; do python3 -m pytest -q -m gpu "$T" -p no:cacheprovider > $O/test_$i.log 2>&1; echo "test run $i rc=$?"; grep -E "passed|failed|Error" $O/test_$i.log | tail -2; done
for i in 1 2; do for rs in 0 1; do python3 .branches/s15/negcheck.py --reset $rs 2>&1 | grep -v Warn | tee -a $O/negcheck.log; done; done
python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $O/runtime_tests.log 2>&1; echo "runtime tests rc=$?"; tail -1 $O/runtime_tests.log
tar czf $O/drivers.tgz .branches/s15/c9.sh .branches/s15/negcheck.py tests/gpu/test_runtime_gpu.py
