"""Level 1: nn.LayerNorm over the last dimension with an affine weight and bias.

Exercises: a parameterised module (state_dict keys `ln.weight`, `ln.bias`). The weight and bias are
randomised in __init__ so that a candidate which fails to receive the reference's parameters (and keeps
the default ones/zeros) gives a wrong answer. The hidden size is tied to the weights and does not
jitter; batch and sequence length do.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = LayerNorm(hidden, eps)(x) over the last dimension of x (batch, seq, hidden)."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps, elementwise_affine=True)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(hidden))
            self.ln.bias.copy_(0.5 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch = 16
seq = 256
hidden = 1024
eps = 1e-5


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = 2.0 * torch.randn(p.jitter_int(batch), p.jitter_int(seq), hidden) + 0.5
    return [x]


def get_init_inputs():
    return [hidden, eps]
