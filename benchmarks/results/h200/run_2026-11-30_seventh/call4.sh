O=$OUT/gpu_tests_7; mkdir -p $O
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 560 python3 -m pytest -q -m gpu tests/gpu/test_reduction_gpu.py tests/gpu/test_drop_in_gpu.py tests/gpu/test_runtime_gpu.py -p no:cacheprovider --junitxml=$O/gpu-tests.xml > $O/gpu-tests.log 2>&1
echo rc=$?
tail -15 $O/gpu-tests.log
