cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c5
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c5/gpu.txt
python3 .branches/s18/e5.py 2>&1 | tee $OUT/c5/e5.log | tail -80
