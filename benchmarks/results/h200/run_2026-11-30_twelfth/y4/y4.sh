#!/usr/bin/env bash
# Twelfth session, call 4: the full GPU suite on main (regs change), the CREDIT evaluation from main against y3's reduction.json, and torch.compile's generated Triton for lars 4K / 8K (what the non-cluster kernels trail there).
set -u
O=$OUT/y4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y4 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 200 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo eval rc=$? t=$(( $(date +%s)-S ))
TORCH_LOGS=output_code timeout 100 python3 - > $O/inductor_lars.log 2>&1 <<'PY'
import torch
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs
for N in (4096, 8192):
    t, s = example_inputs("lars", 4096, N, device="cuda")
    f = torch.compile(EAGER["lars"], dynamic=False)
    f(t, s); torch.cuda.synchronize()
    torch._dynamo.reset()
PY
echo inductor rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y4.sh $O/
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
tail -25 $O/credit_eval.log | cut -c1-200
grep -n "def triton\|num_warps\|XBLOCK\|R0_BLOCK\|RBLOCK\|tl.load\|tl.store\|persistent_reduction\|@triton_heuristics" $O/inductor_lars.log | cut -c1-220 | head -60
