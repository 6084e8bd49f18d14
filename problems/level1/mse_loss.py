"""Level 1: mean squared error loss, returning a 0-dim fp32 tensor.

Exercises: a scalar (0-dim) output; a full reduction whose summation order differs between
implementations.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """loss = mean((pred - target)^2) over all elements; shape ()."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((pred - target) ** 2)


batch = 128
dim = 8192


def get_inputs():
    pred = torch.randn(batch, dim)
    target = torch.randn(batch, dim)
    return [pred, target]


def get_init_inputs():
    return []
