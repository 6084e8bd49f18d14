"""Level 1: row softmax over the last dimension of a (rows, cols) fp32 matrix.

Exercises: a row reduction plus elementwise pass; both dimensions jitter per trial, so `cols` is
usually not a power of two. Inputs are scaled logits (std 4) so rows are peaked and a candidate that
returns zeros or a constant is far outside tolerance.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = softmax(x, dim=-1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


rows = 4096
cols = 1024


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge before get_inputs() runs
    x = torch.randn(p.jitter_int(rows), p.jitter_int(cols)) * 4.0
    return [x]


def get_init_inputs():
    return []
