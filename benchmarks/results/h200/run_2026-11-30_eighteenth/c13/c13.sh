cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c13
python3 .branches/s18/e13.py 2>&1 | grep -v Warning | tee $OUT/c13/e13.log | tail -60
