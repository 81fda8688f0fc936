O=$OUT/run8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/smemkit-cache PYTHONPATH=$PWD/src
timeout 60 python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $O/gpu-tests-runtime.log 2>&1
echo tests rc=$?; tail -2 $O/gpu-tests-runtime.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt
OUT=$O timeout 500 bash scripts/gpu-check reduction-bench > $O/reduction-bench.log 2>&1
echo bench rc=$?
grep -c '"workload"' $O/reduction.json
