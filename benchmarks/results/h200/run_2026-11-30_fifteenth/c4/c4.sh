#!/usr/bin/env bash
# Fifteenth session call 4: (1) the evict_last timing test as the fresh machine's first process,
# three times; (2) Nsight Systems of the offload ring with / without the persisting-L2 reset.
set -u
O=$OUT/c4; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c4
T=tests/gpu/test_runtime_gpu.py::test_a_timing_does_not_find_data_an_earlier_kernel_kept_in_l2
for i in 1 2 3; do python3 -m pytest -q -m gpu "$T" -p no:cacheprovider > $O/evl_$i.log 2>&1; echo "evict_last test run $i rc=$?"; grep -E "passed|failed|assert" $O/evl_$i.log | tail -2; done
which nsys && nsys --version
for arm in 0 1 0 1; do
  n=ring_reset${arm}_$RANDOM
  timeout 150 nsys profile -q -t cuda --cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=repeat -o /tmp/$n \
    python3 .branches/s15/ringdiag.py --reset $arm --out $O/$n.json > $O/$n.log 2>&1; echo "$n rc=$?"
  grep median $O/$n.log
  for f in /tmp/$n*.nsys-rep; do
    nsys stats -q -r cuda_gpu_trace -f csv -o /tmp/$(basename $f .nsys-rep) $f > /dev/null 2>&1
  done
  for c in /tmp/$n*cuda_gpu_trace.csv; do python3 .branches/s15/tracesum.py $c $O/$(basename $c .csv).json; done
done
cd $O && tar czf logs.tgz *.log *.json && rm -f *.log *.json; cd - > /dev/null
tar czf $O/drivers.tgz .branches/s15/c4.sh .branches/s15/ringdiag.py .branches/s15/tracesum.py
