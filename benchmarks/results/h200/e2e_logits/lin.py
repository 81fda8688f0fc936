import torch, json, sys
from smemkit.offload import OffloadedLinear

torch.manual_seed(0)
out = []
for (n, k) in [(4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]:
    lin = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch.bfloat16)
    for r in (0.0127, 0.025, 0.05, 0.1):
        m = OffloadedLinear.from_linear(lin, ratio=r)
        for rows in (1, 8, 9, 64, 992, 7920):
            x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
            ref = (x.double() @ lin.weight.double().t())
            y = m(x).double()
            err = float((y - ref).norm() / ref.norm())
            base = float(((x @ lin.weight.t()).double() - ref).norm() / ref.norm())
            path = getattr(m, "last_path", None)
            try:
                from smemkit.offload.path_rule import linear_path as lp
                path = lp(m.split_weight, rows)
            except Exception as e:
                path = str(e)[:40]
            out.append(dict(n=n, k=k, r=r, rows=rows, err=err, cublas_err=base, path=path))
            if err > 3 * base + 1e-3:
                print("BAD", n, k, r, rows, path, f"{err:.2e} vs cublas {base:.2e}", flush=True)
        del m
        torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
print("done", len(out))
