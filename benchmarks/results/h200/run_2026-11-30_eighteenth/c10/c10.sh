cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c10
git log --oneline -1 > $OUT/c10/commit.txt 2>/dev/null
python3 -c "import torch, cuda.core; print(torch.__version__, cuda.core.__version__)" > $OUT/c10/versions.txt 2>&1
OUT=$OUT/c10 timeout 560 scripts/gpu-check tests offload-ops > $OUT/c10/gpu-check.log 2>&1
echo rc $?
grep -E "passed|failed" $OUT/c10/gpu-tests.log | tail -3
grep -E "FAILED|Error" $OUT/c10/gpu-tests.log | head -20
tail -5 $OUT/c10/gpu-check.log
