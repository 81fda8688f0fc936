cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c3
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 500 python3 benchmarks/offload_attention.py --out $OUT/c3/offload_attention.json --budget-s 300 > $OUT/c3/offload_attention.log 2>&1
echo rc $?
tail -25 $OUT/c3/offload_attention.log
