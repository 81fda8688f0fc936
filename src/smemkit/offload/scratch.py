"""Split-K scratch: the fp32 partials and arrival counters a split kernel's last CTA per tile sums.

The split GEMV (:mod:`.split_gemv`), the direct GEMM (:mod:`.direct_gemm`) and the split decode
attention (:mod:`.attention`) each keep one :class:`SplitScratch` per device.
"""

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

    def _ws_short(self, ws_floats: int) -> bool:
        return bool(ws_floats) and (self.ws is None or self.ws.numel() < ws_floats)

    def _counters_short(self, n_counters: int) -> bool:
        return bool(n_counters) and (self.counters is None or self.counters.numel() < n_counters)

    def needs_growth(self, ws_floats: int, n_counters: int) -> bool:
        """Whether :meth:`reserve` with these sizes would allocate."""
        return self._ws_short(ws_floats) or self._counters_short(n_counters)

    def reserve(self, ws_floats: int, n_counters: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        with self._lock:
            dev = torch.device("cuda", self.device_index)
            if self._ws_short(ws_floats):
                if self.ws is not None:
                    self._retired.append(self.ws)
                self.ws = torch.empty(ws_floats, dtype=torch.float32, device=dev)
            if self._counters_short(n_counters):
                if self.counters is not None:
                    self._retired.append(self.counters)
                self.counters = torch.zeros(max(n_counters, 64), dtype=torch.int32, device=dev)
            return (self.ws if ws_floats else None), (self.counters if n_counters else None)
