#!/usr/bin/env bash
# Ninth session, call 2: per-input sub-passes in Triton (lars / pearson_bwd 4K, 8K) vs torch.compile;
# Inductor's generated code for pearson_bwd / softmax_bwd / layernorm_bwd at 4K.
set -u
O=$OUT/v2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/s9/sub_ab.py $O/sub_ab.json > $O/sub_ab.log 2>&1; echo sub rc=$? t=$(( $(date +%s)-S ))
cp .branches/s9/sub_ab.py $O/
cat > /tmp/dump.py <<'PY'
import torch
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import example_inputs
for name in ("pearson_bwd", "softmax_bwd", "layernorm_bwd", "wvar_bwd"):
    M = 2048 if name == "layernorm_bwd" else 4096
    t, s = example_inputs(name, M, 4096, device="cuda")
    torch.compile(EAGER[name], dynamic=False)(t, s); torch.cuda.synchronize()
PY
TORCH_LOGS=output_code timeout 120 python3 /tmp/dump.py > $O/inductor_4k.log 2>&1; echo dump rc=$? t=$(( $(date +%s)-S ))
grep -c "def triton" $O/inductor_4k.log
tail -n 8 $O/sub_ab.log
