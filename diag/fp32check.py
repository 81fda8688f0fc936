"""Is the MoE greedy plan's prefill drift bf16 noise amplified by routing, or an error? A 6-layer
Mixtral-8x7B-shaped model: prefill logits of r = 0 and of the greedy plan (64/16/16/64 host rows,
5 of 8 experts) against the same weights in float32 (transformers' eager experts)."""
import sys, torch, transformers
from smemkit.offload.e2e import RandomTensors, hf_config
from smemkit.offload.hf_model import offload_from_source, plan_layout
from smemkit.offload.placement import GpuPlacement

LAYERS, B, L = int(sys.argv[1]) if len(sys.argv) > 1 else 6, 1, 100
c = hf_config("mixtral-8x7b"); c.num_hidden_layers = LAYERS
ids = torch.randint(0, c.vocab_size, (B, L), generator=torch.Generator().manual_seed(1)).cuda()

def meta():
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(c, dtype=torch.bfloat16).eval()

def offloaded(plan, ratio, hp):
    m = meta()
    lay = plan_layout(m, batch=B, max_seq_len=128, offload_kv=False, host_path=hp, plan=plan, ratio=ratio)
    off = offload_from_source(m, RandomTensors(m, seed=0, device="cuda"), lay, GpuPlacement(), gpu_budget=None)
    e = off.engine(); e.prefill(ids); lg = e.logits.float().clone()
    del e; off.free(); torch.cuda.empty_cache()
    return lg

m = meta()
src = RandomTensors(m, seed=0, device="cuda")
c32 = hf_config("mixtral-8x7b"); c32.num_hidden_layers = LAYERS
with torch.device("cuda"):
    ref = transformers.AutoModelForCausalLM.from_config(c32, dtype=torch.float32, experts_implementation="eager").eval()
with torch.no_grad():
    for n, p in ref.named_parameters():
        p.copy_(src.get(n).float())
    want = ref(ids).logits[:, -1].float()
del ref; torch.cuda.empty_cache()
for label, args in (("r=0", ("uniform", 0.0, "direct")), ("greedy 0.54 prefetch", ("greedy", 0.54, "prefetch")),
                    ("greedy 0.54 direct", ("greedy", 0.54, "direct")), ("uniform 0.54 prefetch", ("uniform", 0.54, "prefetch"))):
    lg = offloaded(*args)
    print(f"{LAYERS}L {label}: prefill logits vs fp32 {float((lg - want).norm() / want.norm()):.3e}", flush=True)
