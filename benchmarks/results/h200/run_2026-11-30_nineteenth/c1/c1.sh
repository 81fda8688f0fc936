cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c1
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
git rev-parse HEAD > $OUT/c1/tree.txt 2>/dev/null; nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/c1/gpu.txt
timeout 540 python3 .branches/s19/f1.py --out $OUT/c1/f1.json > $OUT/c1/f1.log 2>&1
echo rc $?
tail -40 $OUT/c1/f1.log
