cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c7
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c7/gpu.txt
python3 .branches/s18/e7.py 2>&1 | tee $OUT/c7/e7.log | tail -80
