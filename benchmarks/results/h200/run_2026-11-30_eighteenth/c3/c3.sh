cd "$(dirname "$0")/../.." 2>/dev/null || true
export PYTHONPATH=$PWD/src
mkdir -p $OUT/c3
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/c3/gpu.txt
python3 .branches/s18/e3.py 2>&1 | tee $OUT/c3/e3.log | tail -80
