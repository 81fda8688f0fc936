cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c15
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 400 python3 -m pytest -q -rs -m gpu tests/gpu/test_direct_gemm_gpu.py tests/gpu/test_offload_gpu.py -p no:cacheprovider --junitxml=$OUT/c15/tests.xml > $OUT/c15/tests.log 2>&1
echo rc $?
tail -4 $OUT/c15/tests.log
