"""Level 1: sum over the middle dimension of a 3-D fp32 tensor, keepdim=False.

Exercises: a strided (non-innermost) reduction; an init input (`dim`) that is not a size.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x.sum(dim) for x of shape (batch, dim1, dim2)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch = 64
dim1 = 512
dim2 = 768
reduce_dim = 1


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = torch.randn(p.jitter_int(batch), p.jitter_int(dim1), p.jitter_int(dim2))
    return [x]


def get_init_inputs():
    return [reduce_dim]
