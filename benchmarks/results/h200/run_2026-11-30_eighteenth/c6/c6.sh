cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c6
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c6/gpu.txt
python3 .branches/s18/e6.py 2>&1 | tee $OUT/c6/e6.log | tail -80
