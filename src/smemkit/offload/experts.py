"""A MoE layer's experts split expert by expert between HBM and pinned host memory.

transformers 5.x keeps a Mixtral or Qwen3-MoE layer's experts as one module with 3-D parameters
(``gate_up_proj`` E x 2I x H, ``down_proj`` E x H x I) called as ``experts(hidden, top_k_index,
top_k_weights)``. :class:`OffloadedExperts` takes its place with the first ``E - host_experts``
experts in HBM and the rest in host memory, whole: a token reads all of an expert or none of it,
so a step reads only the routed experts' bytes from either memory (the planner's read fraction).

On a GPU with few enough (token, expert) pairs (a decode step, up to ``moe_gemv.MAX_PAIRS``) one
``moe_gemv`` launch per projection reads the routed experts in place, host experts through device
aliases of their pinned memory: no synchronisation, capturable in the decode engine's graph.
Larger inputs (prefill) and the CPU stand-in run a loop over the routed experts, as transformers'
own eager experts do, with each routed host expert copied to the device before its GEMMs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.moe_gemv import DEFAULT_HOST_CTAS, MAX_PAIRS, expert_gemv, expert_pointers


class OffloadedExperts(nn.Module):
    """Experts ``[0, n_hbm)`` in ``gate_up_hbm``/``down_hbm`` (on the compute device), the rest in
    ``gate_up_host``/``down_host`` (pinned), read in place through ``*_host_view`` when given.

    The parts are plain attributes, not parameters, so ``model.to()`` and ``state_dict`` leave
    them where they were placed (as ``OffloadedLinear`` keeps its weight)."""

    def __init__(self, gate_up_hbm: torch.Tensor, down_hbm: torch.Tensor, gate_up_host: torch.Tensor,
                 down_host: torch.Tensor, act_fn: nn.Module, *, gate_up_host_view: torch.Tensor | None = None,
                 down_host_view: torch.Tensor | None = None, host_ctas: int | None = None) -> None:
        super().__init__()
        self.gate_up_hbm, self.down_hbm = gate_up_hbm, down_hbm
        self.gate_up_host, self.down_host = gate_up_host, down_host
        self.gate_up_host_view, self.down_host_view = gate_up_host_view, down_host_view
        self.act_fn = act_fn
        self.n_hbm, self.host_experts = int(gate_up_hbm.shape[0]), int(gate_up_host.shape[0])
        self.num_experts = self.n_hbm + self.host_experts
        self.intermediate_dim, self.hidden_dim = int(gate_up_hbm.shape[1]) // 2, int(gate_up_hbm.shape[2])
        self.device = gate_up_hbm.device
        self.host_ctas = host_ctas
        self._ptrs: tuple[torch.Tensor, torch.Tensor] | None = None
        if self.device.type == "cuda" and (self.host_experts == 0 or down_host_view is not None):
            self._ptrs = (expert_pointers(gate_up_hbm, gate_up_host_view),
                          expert_pointers(down_hbm, down_host_view))

    @property
    def ratio(self) -> float:
        return self.host_experts / self.num_experts

    def _expert(self, which: str, e: int) -> torch.Tensor:
        if e < self.n_hbm:
            return getattr(self, f"{which}_hbm")[e]
        host = getattr(self, f"{which}_host")[e - self.n_hbm]
        return host.to(self.device, non_blocking=True)

    def uses_kernel(self, pairs: int) -> bool:
        return self._ptrs is not None and pairs <= MAX_PAIRS

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:
        if hidden_states.dim() != 2 or top_k_index.shape[0] != hidden_states.shape[0]:
            raise InvalidArgumentError(f"experts take (tokens, hidden) states and (tokens, k) routes, got "
                                       f"{tuple(hidden_states.shape)} and {tuple(top_k_index.shape)}")
        if self.uses_kernel(top_k_index.numel()):
            return self._kernel_forward(hidden_states, top_k_index, top_k_weights)
        if self.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise InvalidArgumentError(
                f"a step of {top_k_index.shape[0]} tokens x {top_k_index.shape[1]} experts is "
                f"{top_k_index.numel()} token-expert pairs, more than moe_gemv's {MAX_PAIRS}: the per-expert "
                "loop it falls back to synchronises on the routing and cannot be captured in a CUDA graph "
                "(decode fewer sequences at once)")
        return self._loop_forward(hidden_states, top_k_index, top_k_weights)

    def _kernel_forward(self, hidden: torch.Tensor, index: torch.Tensor,
                        weights: torch.Tensor) -> torch.Tensor:
        tokens, k = index.shape
        host_ctas = self.host_ctas or DEFAULT_HOST_CTAS
        pair_expert = index.reshape(-1).to(torch.int32)
        gate_up_ptrs, down_ptrs = self._ptrs
        # zeroed: a pair routed to no expert (an id outside [0, E)) keeps rows of zeros, not garbage
        gate_up = torch.zeros((index.numel(), 2 * self.intermediate_dim), dtype=hidden.dtype,
                              device=hidden.device)
        expert_gemv(gate_up_ptrs, hidden.contiguous(), pair_expert, k, 2 * self.intermediate_dim,
                    self.num_experts, self.n_hbm, host_ctas=host_ctas, out=gate_up)
        gate, up = gate_up.chunk(2, dim=-1)
        act = (self.act_fn(gate) * up).contiguous()
        down = torch.zeros((index.numel(), self.hidden_dim), dtype=hidden.dtype, device=hidden.device)
        expert_gemv(down_ptrs, act, pair_expert, 1, self.hidden_dim, self.num_experts, self.n_hbm,
                    host_ctas=host_ctas, out=down)
        mixed = (down.view(tokens, k, -1).float() * weights.float().unsqueeze(-1)).sum(dim=1)
        return mixed.to(hidden.dtype)

    def _loop_forward(self, hidden: torch.Tensor, index: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        # the computation of transformers' eager experts (per routed expert, its tokens by slot then
        # token), so the CPU stand-in gives bit for bit the logits of the model it came from
        out = torch.zeros_like(hidden)
        by_slot = index.transpose(0, 1)
        for e in torch.unique(index).tolist():
            if not 0 <= e < self.num_experts:
                continue
            slot, token = torch.where(by_slot == e)
            gate, up = F.linear(hidden[token], self._expert("gate_up", e)).chunk(2, dim=-1)
            h = F.linear(self.act_fn(gate) * up, self._expert("down", e))
            out.index_add_(0, token, (h * weights[token, slot, None]).to(out.dtype))
        return out

    def free(self) -> None:
        """Drop every part (fresh empty tensors: a view would keep the storage alive)."""
        self._ptrs = None
        for name in ("gate_up_hbm", "down_hbm", "gate_up_host", "down_host"):
            t = getattr(self, name)
            setattr(self, name, torch.empty((0, *t.shape[1:]), dtype=t.dtype, device=t.device))
        self.gate_up_host_view = self.down_host_view = None

    def extra_repr(self) -> str:
        return (f"num_experts={self.num_experts}, hidden={self.hidden_dim}, "
                f"intermediate={self.intermediate_dim}, "
                f"in HBM {self.n_hbm}, in host memory {self.host_experts}")


def place_experts(placement, gate_up: torch.Tensor, down: torch.Tensor, host_experts: int, act_fn: nn.Module,
                  dtype: torch.dtype) -> OffloadedExperts:
    """An :class:`OffloadedExperts` from an experts module's two tensors: the first ``E -
    host_experts`` experts copied into fresh HBM tensors (never views of the given ones, which
    would keep the whole tensors alive), the rest into pinned memory from ``placement``."""
    n_hbm = int(gate_up.shape[0]) - host_experts
    parts = []
    for t in (gate_up, down):
        hbm = placement.hbm_empty((n_hbm, *t.shape[1:]), dtype)
        hbm.copy_(t[:n_hbm])
        host = placement.pinned_empty((host_experts, *t.shape[1:]), dtype)
        host.copy_(t[n_hbm:])
        view = placement.device_view(host) if host_experts and placement.device.type == "cuda" else None
        parts.append((hbm, host, view))
    (gu_hbm, gu_host, gu_view), (d_hbm, d_host, d_view) = parts
    return OffloadedExperts(gu_hbm, d_hbm, gu_host, d_host, act_fn, gate_up_host_view=gu_view,
                            down_host_view=d_view)
