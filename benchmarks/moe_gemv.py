"""The routed-expert GEMV alone: HBM and host read rates, and the host CTA count.

Mixtral-8x7B's gate_up projection (8 experts of 28672 x 4096 bf16, 235 MB each), experts 0-5 in
HBM and 6-7 in pinned host memory, one decode step of 8 tokens x 2 experts (16 pairs). Cases:
``hbm`` (every pair routed to HBM experts 0-5), ``host`` (every pair to 6-7), ``all`` (pairs over
all 8); for each, the bytes of the distinct routed experts over the launch's time (CUDA events,
median, no L2 flush: 235 MB per expert is 4x the L2) give the rate, against the HBM rate of a
device copy and B_h, a pinned-to-device copy, measured in the same run. ``host`` and ``all`` run
at host CTA counts 8 ... 132: the figure ``moe_gemv.DEFAULT_HOST_CTAS`` is chosen from.

Run: ``python benchmarks/moe_gemv.py --out benchmarks/results/h200/moe_gemv.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

E, N, K, HBM_EXPERTS = 8, 2 * 14336, 4096, 6
TOKENS, PER_TOKEN = 8, 2
HOST_CTAS = (8, 16, 32, 64, 132)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/h200/moe_gemv.json"))
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)

    import torch

    from smemkit.hw.environment import device_block, provenance
    from smemkit.offload import PinnedBuffer
    from smemkit.offload.e2e import measure_hbm_rate, measure_host_rate
    from smemkit.offload.moe_gemv import expert_gemv, expert_pointers, prepare
    from smemkit.runtime.device import require_gpu
    from smemkit.runtime.timing import time_gpu

    require_gpu()
    started = time.time()
    rates = {"host_bytes_per_s": measure_host_rate(), "hbm_bytes_per_s": measure_hbm_rate()}
    g = torch.Generator(device="cuda").manual_seed(0)
    hbm = (torch.randn(HBM_EXPERTS, N, K, device="cuda", generator=g) * 0.02).bfloat16()
    host_n = E - HBM_EXPERTS
    buffer = PinnedBuffer(host_n * N * K * 2)
    host = buffer.tensor(torch.bfloat16, (host_n, N, K))
    host.copy_((torch.randn(host_n, N, K, device="cuda", generator=g) * 0.02).bfloat16().cpu())
    view = buffer.cuda_view(torch.bfloat16, (host_n, N, K))
    ptrs = expert_pointers(hbm, view)
    x = torch.randn(TOKENS, K, device="cuda").bfloat16()
    prepare(torch.bfloat16, torch.cuda.current_device())
    expert_bytes = N * K * 2
    routes = {
        "hbm": [e % HBM_EXPERTS for e in range(TOKENS * PER_TOKEN)],
        "host": [HBM_EXPERTS + (e % host_n) for e in range(TOKENS * PER_TOKEN)],
        "all": [e % E for e in range(TOKENS * PER_TOKEN)],
    }
    records = []
    for case, route in routes.items():
        pair = torch.tensor(route, dtype=torch.int32, device="cuda")
        distinct = sorted(set(route))
        hbm_bytes = sum(expert_bytes for e in distinct if e < HBM_EXPERTS)
        host_bytes = sum(expert_bytes for e in distinct if e >= HBM_EXPERTS)
        y = torch.empty(len(route), N, device="cuda", dtype=torch.bfloat16)
        for ctas in (HOST_CTAS if host_bytes else (HOST_CTAS[0],)):
            def launch(pair=pair, ctas=ctas, y=y):
                return expert_gemv(ptrs, x, pair, PER_TOKEN, N, E, HBM_EXPERTS, host_ctas=ctas, out=y)

            t = time_gpu(launch, warmup=2, reps=args.reps, reset_persisting_l2=False)
            ms = t.median_ms
            floor_ms = max(hbm_bytes / rates["hbm_bytes_per_s"], host_bytes / rates["host_bytes_per_s"]) * 1e3
            rec = {"case": case, "host_ctas": ctas if host_bytes else None, "pairs": len(route),
                   "distinct_experts": len(distinct), "hbm_bytes": hbm_bytes, "host_bytes": host_bytes,
                   "median_ms": ms, "floor_ms": floor_ms, "over_floor": ms / floor_ms,
                   "host_gbps": host_bytes / (ms * 1e-3) / 1e9 if host_bytes else None,
                   "hbm_gbps": hbm_bytes / (ms * 1e-3) / 1e9 if hbm_bytes else None}
            records.append(rec)
            print(f"{case:5s} host_ctas {str(rec['host_ctas']):>4s}: {ms:7.3f} ms, floor {floor_ms:7.3f} ms "
                  f"({rec['over_floor']:.2f}x)", flush=True)
    device = device_block()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"provenance": provenance(device), "device": device, "rates": rates,
                                    "shape": {"experts": E, "n": N, "k": K, "hbm_experts": HBM_EXPERTS,
                                              "tokens": TOKENS, "per_token": PER_TOKEN},
                                    "records": records}, indent=1) + "\n")
    buffer.free()
    print(f"B_h {rates['host_bytes_per_s'] / 1e9:.1f} GB/s, HBM {rates['hbm_bytes_per_s'] / 1e12:.2f} TB/s; "
          f"wrote {args.out} in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
