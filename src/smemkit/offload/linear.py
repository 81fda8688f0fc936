"""The split linear for decode: ``split_linear`` and ``OffloadedLinear``.

``split_linear(x, w)`` computes ``x @ W.T (+ bias)`` for a :class:`~smemkit.offload.pinned.SplitWeight`
``W`` whose last rows live in pinned host memory. The default ``path="auto"`` runs the split GEMV
kernel (:mod:`.split_gemv`, one kernel reading both parts) only where it is measured faster than
the ring path of :mod:`.ring_gemm` (cuBLAS GEMMs, the host rows copied by the copy engine through a
two-slot ring under them): at 1-8 rows with a small host part (:mod:`.path_rule`).
``path="kernel"`` forces it (past 64 rows in chunks of 64, each reading the whole weight).

:class:`OffloadedLinear` is a drop-in for ``nn.Linear`` (bias supported) holding its weight as a
``SplitWeight``. Its forward allocates only the output: the kernels are loaded, the split-K
workspace reserved and the ring path's slots for the current stream allocated when the module is
built (a CUDA-graph capture, on torch's capture stream, allocates that stream's ring at its first
capture, from the graph's pool; the ring path's first call also gets cuBLAS a workspace for the
ring's GEMM stream, :mod:`.ring_gemm`), so the forward can be captured in a CUDA graph.
"""

from __future__ import annotations

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.direct_gemm import direct_linear
from smemkit.offload.path_rule import linear_path
from smemkit.offload.pinned import WEIGHT_DTYPES, SplitWeight, check_weight
from smemkit.offload.ring_gemm import host_ring, linear_into, ring_linear
from smemkit.offload.scratch import SplitScratch
from smemkit.offload.split_gemv import default_scratch, host_config, launch, plan_for, prepare
from smemkit.offload.split_plan import HOST_WINDOW_UNIT, MAX_BATCH
from smemkit.runtime.tensors import check_tensor


def check_split_args(x: object, weight: object, bias: object = None,
                     out: object = None) -> tuple[int, int, int]:
    """Argument checks of :func:`split_linear` that need no GPU; returns (M, N, K).

    ``weight`` needs only ``shape``, ``dtype`` and ``device`` (a SplitWeight).
    """
    shape = getattr(weight, "shape", None)
    if not isinstance(weight, SplitWeight) and not (hasattr(weight, "n_hbm") and shape is not None):
        raise InvalidArgumentError(f"weight must be a SplitWeight, got {type(weight).__name__}")
    n, k = shape
    wdtype, wdev = weight.dtype, weight.device
    if not isinstance(x, torch.Tensor):
        raise InvalidArgumentError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] != k:
        raise InvalidArgumentError(f"x must have shape (..., {k}) to match the weight ({n}x{k}), "
                                   f"got {tuple(x.shape)}")
    check_tensor("x", x, dtype=wdtype, device=wdev)
    m = x.numel() // k if k else 0
    if bias is not None:
        check_tensor("bias", bias, dtype=wdtype, shape=(n,), device=wdev, alignment=2)
    if out is not None:
        check_tensor("out", out, dtype=wdtype, shape=(*x.shape[:-1], n), device=wdev, alignment=2)
    return m, n, k


def split_linear(x: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None = None, *,
                 host_ctas: int | None = None, host_window: int | None = None,
                 out: torch.Tensor | None = None, scratch: SplitScratch | None = None,
                 split_g: int | None = None, split_h: int | None = None, host_load: int = 0,
                 host_stage: int = 1, hbm_depth: int | None = None,
                 ctas_per_sm: int | None = None, path: str = "auto") -> torch.Tensor:
    """``x @ W.T (+ bias)`` with ``W`` split between HBM and pinned host memory, in one kernel.

    ``x``: (..., K) bf16/fp16 CUDA tensor (the weight's dtype), contiguous; ``bias``: (N,) or None.
    ``host_ctas``: CTAs reading host rows (default: the device profile's congestion choice, else
    8); ``host_window``: bytes of host reads in flight per such CTA (8192, 16384, 24576 or
    32768; default likewise, else 16384). ``out``: an output tensor to write (shape (..., N)).
    ``split_g``/``split_h`` force the k-splits; ``hbm_depth`` the HBM pipeline depth (stages of
    HBM_ROWS x 64 k in flight per CTA, default 2); ``ctas_per_sm`` caps the CTAs per SM;
    ``host_load`` (0 ld.global.cs, 1 ld.global.nc, 2 ld.global) / ``host_stage`` (1 staged through
    shared memory, 0 fragments loaded directly, 2 staged with the next group prefetched, 3 groups
    bulk-copied into shared memory by cp.async.bulk, sm_90+: 0.4x the rate of 1) pick the
    host read variant of split_gemv.cu (the defaults 0 / 1 are the measured host path; the
    others are experiments). Returns (..., N) in x's dtype.

    ``path`` (see :func:`~.path_rule.linear_path`): ``"auto"`` runs a weight with no host rows (ratio 0) as
    the plain all-HBM product in cuBLAS (``torch.nn.functional.linear``, whose HBM stream the
    split kernel's does not match: offload_ops.json, r = 0), and otherwise whichever of the split
    kernel and the ring path (:mod:`.ring_gemm`) :func:`~.path_rule.auto_path` predicts faster (the ring past
    8 rows); ``"kernel"`` or ``"ring"`` force one (the kernel experiments above imply ``"kernel"``);
    ``"direct"`` runs DAK's direct-access GEMM for the host rows beside cuBLAS (:mod:`.direct_gemm`,
    sm_90+, never chosen by ``"auto"``: slower than the ring at every measured batch-512 point).
    """
    m, n, k = check_split_args(x, weight, bias, out)
    from smemkit.runtime.device import require_gpu

    require_gpu()
    if weight.freed:
        raise InvalidArgumentError("the SplitWeight was freed")
    device_index = weight.device.index
    lead = tuple(x.shape[:-1])
    hc, hs = host_config(host_ctas, host_window, device_index)  # checked on every path
    experiment = ((split_g, split_h, hbm_depth, ctas_per_sm) != (None,) * 4
                  or (host_load, host_stage) != (0, 1))
    chosen = linear_path(weight, m, path)
    if experiment and chosen != "kernel":
        if path != "auto":
            raise InvalidArgumentError(f"split_g, split_h, hbm_depth, ctas_per_sm, host_load and host_stage "
                                       f"configure the split kernel; path={path!r} does not run it")
        chosen = "kernel"
    if m and chosen == "cublas":  # what nn.Linear runs (F.linear: addmm / mm)
        if out is None:
            return torch.nn.functional.linear(x, weight.hbm, bias)
        linear_into(x.reshape(m, k), weight.hbm, bias, out.view(m, n))
        return out
    y = out if out is not None else torch.empty((*lead, n), dtype=x.dtype, device=x.device)
    if m == 0:
        return y
    x2 = x.reshape(m, k)
    y2 = y.view(m, n)
    if chosen == "ring":
        ring_linear(x2, weight, bias, y2)
        return y
    if chosen == "direct":
        direct_linear(x2, weight, bias, y2)
        return y
    scratch = scratch or default_scratch(device_index)
    for start in range(0, m, MAX_BATCH):
        stop = min(m, start + MAX_BATCH)
        launch(x2[start:stop], y2[start:stop], weight, bias, hc, hs, scratch, split_g, split_h, host_load,
                host_stage, hbm_depth, ctas_per_sm)
    return y


class OffloadedLinear(nn.Module):
    """``nn.Linear`` with its weight split between HBM and pinned host memory (DAK).

    Build it with :meth:`from_linear` (``OffloadedLinear.from_linear(linear, ratio=0.1)``). The
    forward accepts (..., in_features) bf16/fp16 CUDA inputs and returns (..., out_features). The
    weight is not a Parameter (inference only; ``state_dict`` holds the bias alone); moving the
    module with ``.to()`` is not supported. ``free()`` releases the pinned memory at once.
    """

    def __init__(self, weight: SplitWeight, bias: torch.Tensor | None = None, *, host_ctas: int | None = None,
                 host_window: int | None = None, max_batch: int = MAX_BATCH) -> None:
        super().__init__()
        if not isinstance(weight, SplitWeight):
            raise InvalidArgumentError(f"weight must be a SplitWeight, got {type(weight).__name__}")
        n, k = weight.shape
        self.in_features, self.out_features = k, n
        self.split_weight = weight
        if bias is not None:
            check_tensor("bias", bias, dtype=weight.dtype, shape=(n,), device=weight.device, alignment=2)
        self.register_buffer("bias", bias)
        self.host_ctas, self.host_window = host_ctas, host_window
        self._host = host_config(host_ctas, host_window, weight.device.index)
        self.scratch = default_scratch(weight.device.index)
        self._prepare(max_batch)

    def _prepare(self, max_batch: int) -> None:
        """Load the kernels and reserve the workspace every batch up to ``max_batch`` rows needs, so
        the forward allocates nothing but its output (CUDA-graph capture)."""
        w = self.split_weight
        device_index = w.device.index
        prepare(w.dtype, device_index, max_batch)
        n, k = w.shape
        need_ws, need_counters = 0, 0
        for b in range(1, min(max_batch, MAX_BATCH) + 1):
            plan = plan_for(n, k, b, w.n_hbm, w.dtype, device_index, host_ctas=self._host[0],
                            host_steps=self._host[1])
            need_ws, need_counters = max(need_ws, plan.ws_floats), max(need_counters, plan.n_counters)
        self.scratch.reserve(need_ws, need_counters)
        if w.host_rows:
            host_ring(w.device, w.dtype)  # the current stream's ring (captures allocate their own)

    @classmethod
    def from_linear(cls, linear: nn.Linear, ratio: float, *, device: int | torch.device | None = None,
                    host_ctas: int | None = None, host_window: int | None = None,
                    max_batch: int = MAX_BATCH) -> OffloadedLinear:
        """Split ``linear``'s weight at offload ratio ``ratio`` (rows rounded to the kernel's 16-row
        tile). ``linear`` is not modified; its weight must be bf16 or fp16 with in_features a
        multiple of 8. Pinned memory is allocated before anything is copied."""
        if not isinstance(linear, nn.Linear):
            raise InvalidArgumentError(f"from_linear needs an nn.Linear, got {type(linear).__name__}")
        check_weight(linear.weight.detach(), "linear.weight")
        if linear.weight.dtype not in WEIGHT_DTYPES:  # pragma: no cover - check_weight covers it
            raise InvalidArgumentError("linear.weight must be bfloat16 or float16")
        weight = SplitWeight(linear.weight.detach(), ratio, device=device)
        bias = None
        if linear.bias is not None:
            bias = linear.bias.detach().to(weight.device, copy=True).contiguous()
        return cls(weight, bias, host_ctas=host_ctas, host_window=host_window, max_batch=max_batch)

    @property
    def ratio(self) -> float:
        return self.split_weight.ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return split_linear(x, self.split_weight, self.bias, host_ctas=self._host[0],
                            host_window=self._host[1] * HOST_WINDOW_UNIT, scratch=self.scratch)

    def free(self) -> None:
        """Release the pinned rows now."""
        self.split_weight.free()

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, ratio={self.ratio:.4f}, host_ctas={self._host[0]}, "
                f"host_window={self._host[1] * HOST_WINDOW_UNIT}")
