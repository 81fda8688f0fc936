O=$OUT/final_tests; mkdir -p $O
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 100 python3 -m pytest -q -m gpu tests/gpu/test_drop_in_gpu.py -p no:cacheprovider > $O/gpu-tests-drop-in.log 2>&1
echo rc=$?; tail -2 $O/gpu-tests-drop-in.log
timeout 100 python3 -m pytest -q -m gpu tests/gpu/test_reduction_gpu.py -k "dispatch or autotune or grid" -p no:cacheprovider > $O/gpu-tests-dispatch.log 2>&1
echo rc=$?; tail -2 $O/gpu-tests-dispatch.log
