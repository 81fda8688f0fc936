cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c4
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c4/gpu.txt
python3 .branches/s18/e4.py 2>&1 | tee $OUT/c4/e4.log | tail -80
