cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c12
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
python3 -m pytest -q -rs -m gpu tests/gpu/test_direct_gemm_gpu.py -p no:cacheprovider --junitxml=$OUT/c12/tests.xml > $OUT/c12/tests.log 2>&1
echo rc $?
tail -6 $OUT/c12/tests.log
