"""The modules an offloaded Hugging Face model runs: split linears and a split input embedding.

``StridedOffloadedLinear`` is ``OffloadedLinear`` for inputs Hugging Face hands a linear: the
LM head gets ``hidden_states[:, -1:, :]``, a strided view whenever the batch has more than one
sequence, and the split kernels need contiguous rows (``nn.Linear`` takes any strides).

``CpuSplitWeight`` / ``CpuSplitLinear`` are the stand-ins :class:`~.placement.CpuPlacement`
builds where no GPU exists: the same row split (``hbm`` rows first, ``host`` rows last, the
attributes ``SplitWeight`` has), held in ordinary CPU memory, and a forward that multiplies by
the two parts joined, so an offloaded model gives bit for bit the logits of the model it came
from. They check placement and plumbing on the CPU; they offload nothing.

``SplitEmbedding`` is the input embedding table split the same way. An untied table lives wholly
in host memory (the planner's assumption: a decode step reads only B of its rows); a table tied
to the LM head shares that head's two parts. Rows in host memory are read in place through a
device alias of their pinned memory (:meth:`SplitEmbedding.attach_host_view`): a gather kernel
reading B rows over the host link, no synchronisation, capturable in a CUDA graph. Where no alias
can be made the rows are gathered on the CPU and copied over (correct, a synchronisation per
forward, and not capturable: the decode engine's capture then fails naming it).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from smemkit.offload import OffloadedLinear


class StridedOffloadedLinear(OffloadedLinear):
    """``OffloadedLinear`` that accepts strided inputs, as ``nn.Linear`` does (copied only if needed)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.contiguous())


class CpuSplitWeight:
    """An (N, K) weight as two CPU tensors: rows ``[0, n_hbm)`` in ``hbm``, the rest in ``host``."""

    def __init__(self, hbm: torch.Tensor, host: torch.Tensor) -> None:
        self.hbm, self.host = hbm, host
        self.dtype = hbm.dtype
        self.device = hbm.device

    @property
    def shape(self) -> tuple[int, int]:
        return (self.hbm.shape[0] + self.host.shape[0], self.hbm.shape[1])

    @property
    def n_hbm(self) -> int:
        return self.hbm.shape[0]

    @property
    def host_rows(self) -> int:
        return self.host.shape[0]

    @property
    def ratio(self) -> float:
        return self.host_rows / self.shape[0]

    def to_dense(self) -> torch.Tensor:
        return torch.cat([self.hbm, self.host])

    def free(self) -> None:
        self.hbm = self.hbm[:0]
        self.host = self.host[:0]


class CpuSplitLinear(nn.Module):
    """The CPU stand-in for ``OffloadedLinear``: ``x @ [hbm; host].T (+ bias)``."""

    def __init__(self, weight: CpuSplitWeight, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.split_weight = weight
        self.out_features, self.in_features = weight.shape
        self.register_buffer("bias", bias)

    @property
    def ratio(self) -> float:
        return self.split_weight.ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.split_weight.to_dense(), self.bias)

    def free(self) -> None:
        self.split_weight.free()

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, ratio={self.ratio:.4f}")


class SplitEmbedding(nn.Module):
    """An embedding table whose first rows (``hbm``, on the compute device) and last rows (``host``,
    in host memory) are separate tensors. Neither is a parameter or buffer, so ``model.to()`` and
    ``state_dict`` leave them alone, as they leave an ``OffloadedLinear``'s weight."""

    def __init__(self, hbm: torch.Tensor, host: torch.Tensor, padding_idx: int | None = None) -> None:
        super().__init__()
        self.hbm, self.host = hbm, host
        self.num_embeddings = hbm.shape[0] + host.shape[0]
        self.embedding_dim = hbm.shape[1]
        self.padding_idx = padding_idx
        self.host_view: torch.Tensor | None = None
        self.host_view_error: str | None = None

    def attach_host_view(self, make: Callable[[], torch.Tensor]) -> None:
        """Read the host rows through ``make()``, a tensor on the compute device aliasing them;
        if making it fails, keep the CPU gather and remember why (``host_view_error``)."""
        if self.host.shape[0] == 0:
            return
        try:
            self.host_view = make()
        except Exception as exc:  # torch or the driver refused the alias
            self.host_view_error = f"{type(exc).__name__}: {exc}"

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n_hbm = self.hbm.shape[0]
        if self.host.shape[0] == 0:
            return F.embedding(ids, self.hbm)
        host_ids = (ids - n_hbm).clamp(min=0)
        if self.host_view is not None:
            from_host = F.embedding(host_ids, self.host_view)
        else:
            from_host = F.embedding(host_ids.to(self.host.device), self.host).to(self.hbm.device)
        if n_hbm == 0:
            return from_host
        from_hbm = F.embedding(ids.clamp(max=n_hbm - 1), self.hbm)
        return torch.where((ids < n_hbm).unsqueeze(-1), from_hbm, from_host)

    def extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.embedding_dim}, rows in HBM {self.hbm.shape[0]}, "
                f"in host memory {self.host.shape[0]}")
