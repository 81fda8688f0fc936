cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c9
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c9/gpu.txt
python3 .branches/s18/e9.py 2>&1 | tee $OUT/c9/e9.log | tail -80
