"""Host -> device copy rate with the pinned source split over 1, 2, 4 streams copying at once
(do several copy engines beat one?). Experiment driver: `python ce_probe.py OUT.json`."""
import json, statistics, sys
import torch
from smemkit.offload.pinned import PinnedBuffer

N = 1 << 30
buf = PinnedBuffer(N)
src = buf.tensor(torch.uint8)
src.fill_(7)
dst = torch.empty(N, dtype=torch.uint8, device="cuda")
recs = []
for nstreams in (1, 2, 3, 4, 8):
    streams = [torch.cuda.Stream() for _ in range(nstreams)]
    part = N // nstreams // 4096 * 4096
    times = []
    for rep in range(7):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        main = torch.cuda.current_stream()
        start.record(main)
        for i, s in enumerate(streams):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                dst[i * part:(i + 1) * part].copy_(src[i * part:(i + 1) * part], non_blocking=True)
        for s in streams:
            main.wait_stream(s)
        end.record(main)
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times[1:])
    gbps = part * nstreams / (ms * 1e6)
    ok = bool((dst[: part * nstreams] == 7).all())
    recs.append({"streams": nstreams, "bytes": part * nstreams, "ms": ms, "gbps": gbps, "data_ok": ok})
    print(f"{nstreams} streams: {gbps:6.2f} GB/s ({ms:.3f} ms) ok={ok}", flush=True)
json.dump({"records": recs}, open(sys.argv[1], "w"), indent=1)
buf.free()
