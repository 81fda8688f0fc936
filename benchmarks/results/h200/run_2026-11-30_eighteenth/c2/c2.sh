cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c2
python3 .branches/s18/e2.py 2>&1 | grep -v Warning | tee $OUT/c2/e2.log | tail -100
