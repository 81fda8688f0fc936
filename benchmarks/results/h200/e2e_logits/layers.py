import copy, torch
from smemkit.offload import offload_model
from smemkit.offload.e2e import hf_config, random_model
cfg = hf_config("llama-3-8b"); cfg.num_hidden_layers = 2
torch.manual_seed(1)
ids = torch.randint(0, cfg.vocab_size, (8, 990), device="cuda")
for r in (0.0127, 0.025, 0.05):
    ref = random_model(cfg, seed=3, device="cuda")
    off_m = copy.deepcopy(ref)
    off = offload_model(off_m, ratio=r, plan="uniform", batch=8, max_seq_len=1024, offload_kv=False)
    outs = {}
    def hook(tag):
        def f(mod, inp, out):
            o = out[0] if isinstance(out, tuple) else out
            if torch.is_tensor(o): outs.setdefault(tag, []).append(o.detach().double())
        return f
    hs = []
    names = [n for n, m in ref.named_modules() if n and n.count(".") <= 4]
    for n, m in ref.named_modules():
        if n in names: hs.append(m.register_forward_hook(hook(("ref", n))))
    for n, m in off.model.named_modules():
        if n in names: hs.append(m.register_forward_hook(hook(("off", n))))
    with torch.no_grad():
        a = ref(ids, use_cache=False).logits[:, -1].double()
        b = off.model(ids, use_cache=False).logits[:, -1].double()
    print(f"r={r} logits rel err {float((a-b).norm()/a.norm()):.2e}", flush=True)
    shown = 0
    for n in names:
        ra, ob = outs.get(("ref", n)), outs.get(("off", n))
        if not ra or not ob or ra[0].shape != ob[0].shape: continue
        e = float((ra[0]-ob[0]).norm()/(ra[0].norm()+1e-30))
        if e > 1e-2 and shown < 8:
            print(f"  {n}: {e:.2e} {type(dict(off.model.named_modules())[n]).__name__}", flush=True); shown += 1
    print("  ratios:", {k: round(v, 4) for k, v in list(off.ratios.items())[:6]}, flush=True)
    for h in hs: h.remove()
    off.free(); del ref, off_m, off; torch.cuda.empty_cache()
