cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c8
git log --oneline -1 > $OUT/c8/commit.txt 2>/dev/null
python3 -c "import torch, cuda.core; print(torch.__version__, cuda.core.__version__)" > $OUT/c8/versions.txt 2>&1
OUT=$OUT/c8 timeout 560 scripts/gpu-check tests offload-ops > $OUT/c8/gpu-check.log 2>&1
echo rc $?
grep -E "passed|failed" $OUT/c8/gpu-tests.log | tail -3
grep -E "FAILED|Error" $OUT/c8/gpu-tests.log | head -20
tail -5 $OUT/c8/gpu-check.log
