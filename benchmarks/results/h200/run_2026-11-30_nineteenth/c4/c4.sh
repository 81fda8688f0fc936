cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c4
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 500 python3 .branches/s19/f4.py --out $OUT/c4/f4.json > $OUT/c4/f4.log 2>&1
echo rc $?
tail -25 $OUT/c4/f4.log
