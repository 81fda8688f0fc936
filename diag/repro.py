import sys, time, torch, transformers
sys.path.insert(0, "benchmarks")
from smemkit.offload.e2e import RandomTensors, hf_config
from smemkit.offload.hf_model import offload_from_source, plan_layout
from smemkit.offload.placement import GpuPlacement

def cfg(arch, layers=2):
    c = hf_config("mixtral-8x7b" if arch == "mixtral" else "llama-3-8b")
    c.num_hidden_layers = layers
    return c

def run(arch, batch, plan, ratio, host_path, budget=None, layers=2):
    c = cfg(arch, layers)
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(c, dtype=torch.bfloat16).eval()
    opts = dict(gpu_mem_gib=budget) if budget else dict(ratio=ratio)
    lay = plan_layout(m, batch=batch, max_seq_len=128, offload_kv=False, host_path=host_path, plan=plan, **opts)
    off = offload_from_source(m, RandomTensors(m, seed=0, device="cuda"), lay, GpuPlacement(), gpu_budget=None)
    e = off.engine()
    ids = torch.randint(0, c.vocab_size, (batch, 100), generator=torch.Generator().manual_seed(1)).cuda()
    e.prefill(ids)
    lg = e.logits.float().clone()
    e.capture(); e.decode(4, graph=True)
    toks = e.history[:, 100:105].clone()
    info = {s.name.split('.')[-1] if 'layers' in s.name else s.name: s.host_rows for s in lay.linears if 'layers.0' in s.name or s.name == 'lm_head'}
    hx = sorted({x.host_experts for x in lay.experts})
    del e; off.free(); torch.cuda.synchronize(); torch.cuda.empty_cache()
    return lg, toks, info, hx, lay.staging_bytes

ref, rt, *_ = run("mixtral", 1, "uniform", 0.0, "direct", layers=6)
for hp in ("prefetch", "direct"):
    lg, tk, info, hx, st = run("mixtral", 1, "greedy", 0.54, hp, layers=6)
    print(f"6L mixtral b1 greedy {hp}: err {float((lg - ref).norm() / ref.norm()):.2e} tokens eq {bool(torch.equal(tk, rt))} rows {info} experts {hx} staging {st}", flush=True)
for arch in ("mixtral", "llama"):
    for batch in (1, 8):
        ref, rt, _, _, _ = run(arch, batch, "uniform", 0.0, "direct")
        for plan, ratio in (("greedy", 0.54), ("uniform", 0.54), ("greedy", 0.1), ("uniform", 0.0127)):
            for hp in ("prefetch", "direct"):
                try:
                    lg, tk, info, hx, st = run(arch, batch, plan, ratio, hp)
                    err = float((lg - ref).norm() / ref.norm())
                    print(f"{arch} b{batch} {plan} {ratio} {hp}: prefill err {err:.2e} tokens eq {bool(torch.equal(tk, rt))} rows {info} experts {hx} staging {st}", flush=True)
                except Exception as exc:
                    print(f"{arch} b{batch} {plan} {ratio} {hp}: ERROR {type(exc).__name__}: {str(exc)[:200]}", flush=True)
