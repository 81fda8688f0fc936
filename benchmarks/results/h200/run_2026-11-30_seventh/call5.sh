O=$OUT/run7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt
OUT=$O timeout 585 bash scripts/gpu-check reduction-bench > $O/reduction-bench.log 2>&1
echo rc=$?
tail -3 $O/reduction-bench.log
ls -la $O
