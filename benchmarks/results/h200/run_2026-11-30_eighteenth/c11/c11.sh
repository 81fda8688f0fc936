cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c11
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
python3 -m pytest -q -m gpu tests/gpu/test_direct_gemm_gpu.py tests/gpu/test_host_paths_gpu.py -p no:cacheprovider --junitxml=$OUT/c11/tests.xml > $OUT/c11/tests.log 2>&1
echo rc $?
tail -3 $OUT/c11/tests.log
