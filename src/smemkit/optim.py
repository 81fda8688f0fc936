"""``smemkit.optim.LARS``: LARS with momentum (You et al.), one fused reduction-reuse kernel per
parameter tensor: both norms, the trust ratio and the update in one pass over w, g, v."""

from __future__ import annotations

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import torch_ops  # noqa: F401  (registers torch.ops.smemkit.*)


class LARS(torch.optim.Optimizer):
    """Per tensor: trust = eta*|w| / (|g| + weight_decay*|w|) (1 if a norm is 0),
    v = momentum*v + lr*trust*(g + weight_decay*w), w = w - v (SPEC §1 `lars`)."""

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 1e-3) -> None:
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay),
                            ("eta", eta)):
            if not value >= 0:
                raise InvalidArgumentError(f"{name} must be >= 0, got {value}")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay,
                                  "eta": eta})

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise InvalidArgumentError("LARS does not support sparse gradients")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                v = state["momentum_buffer"]
                w_new, v_new = torch.ops.smemkit.lars_step(
                    p.reshape(1, -1), p.grad.reshape(1, -1), v.reshape(1, -1), group["lr"],
                    group["momentum"], group["weight_decay"], group["eta"])
                p.copy_(w_new.view_as(p))
                v.copy_(v_new.view_as(v))
        return loss
