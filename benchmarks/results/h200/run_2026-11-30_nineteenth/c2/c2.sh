cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c2
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
git rev-parse HEAD > $OUT/c2/tree.txt 2>/dev/null
timeout 560 python3 benchmarks/offload_ops.py --out $OUT/c2/offload_ops.json > $OUT/c2/offload_ops.log 2>&1
echo rc $?
tail -8 $OUT/c2/offload_ops.log
