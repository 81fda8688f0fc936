cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c5
echo "a commit after baa1a66 (status only; src as at db3e022)" > $OUT/c5/tree.txt
OUT=$OUT/c5 timeout 560 scripts/gpu-check tests > $OUT/c5/gpu-check.log 2>&1
echo rc $?
grep -E "passed|failed" $OUT/c5/gpu-tests.log | tail -3
grep -E "FAILED|Error" $OUT/c5/gpu-tests.log | head -20
