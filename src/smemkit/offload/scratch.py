"""The split-K workspace and arrival counters shared by the offload kernels that sum partials across
CTAs (``split_gemv.cu``, ``split_attention.cu``, ``chunk_gemm.cu``)."""

from __future__ import annotations

import threading

import torch


class SplitScratch:
    """The split-K workspace (fp32 partials) and the arrival counters of one device.

    Kernels on one stream use it one after another; two streams running split kernels at the same
    time need a scratch each (pass ``scratch=``). Buffers only grow; an outgrown buffer is kept
    alive, since a captured CUDA graph may still point at it. Counters are zero when a launch
    starts and the kernel leaves them zero.
    """

    def __init__(self, device_index: int) -> None:
        self.device_index = device_index
        self.ws: torch.Tensor | None = None
        self.counters: torch.Tensor | None = None
        self._retired: list[torch.Tensor] = []
        self._lock = threading.Lock()

    def reserve(self, ws_floats: int, n_counters: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        with self._lock:
            dev = torch.device("cuda", self.device_index)
            if ws_floats and (self.ws is None or self.ws.numel() < ws_floats):
                if self.ws is not None:
                    self._retired.append(self.ws)
                self.ws = torch.empty(ws_floats, dtype=torch.float32, device=dev)
            if n_counters and (self.counters is None or self.counters.numel() < n_counters):
                if self.counters is not None:
                    self._retired.append(self.counters)
                self.counters = torch.zeros(max(n_counters, 64), dtype=torch.int32, device=dev)
            return (self.ws if ws_floats else None), (self.counters if n_counters else None)
