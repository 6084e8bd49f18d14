"""Level 2: residual add followed by RMSNorm with a learned per-channel weight.

Exercises: a fused elementwise + row-reduction chain with two same-shaped inputs and one custom
nn.Parameter (`weight`, randomised in __init__ so a candidate that does not receive it is wrong).
Sizes are fixed.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """h = x + residual; y = h / sqrt(mean(h^2, -1) + eps) * weight."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = x + residual
        rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return h * rms * self.weight


batch = 8
seq = 512
hidden = 2048
eps = 1e-6


def get_inputs():
    x = torch.randn(batch, seq, hidden)
    residual = torch.randn(batch, seq, hidden)
    return [x, residual]


def get_init_inputs():
    return [hidden, eps]
