"""Level 1: max over the last dimension returning (values, indices).

Exercises: a forward that returns a tuple of two tensors, the second of dtype int64 (compared
exactly). Inputs are continuous random values, so ties (where argmax could legitimately differ) have
probability ~0.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """(values, indices) = torch.max(x, dim=-1) for x of shape (rows, cols)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        values, indices = torch.max(x, dim=-1)
        return values, indices


rows = 8192
cols = 1000


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = torch.randn(p.jitter_int(rows), p.jitter_int(cols))
    return [x]


def get_init_inputs():
    return []
