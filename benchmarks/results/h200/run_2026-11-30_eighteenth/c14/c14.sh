cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c14
python3 .branches/s18/e14.py 2>&1 | grep -v Warning | tee $OUT/c14/e14.log | tail -60
