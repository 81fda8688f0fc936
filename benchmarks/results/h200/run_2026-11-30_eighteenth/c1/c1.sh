set -x
cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c1
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c1/gpu.txt
python3 .branches/s18/e1.py 2>&1 | tee $OUT/c1/e1.log | tail -80
