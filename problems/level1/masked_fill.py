"""Level 1: masked fill of an fp32 tensor with a bool mask.

Exercises: a bool input (must stay bool; kjudge must not cast it to float) and a Python float init
input.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x.masked_fill(mask, value); mask has x's shape and dtype torch.bool."""

    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(mask, self.value)


rows = 2048
cols = 2048
fill_value = -3.5


def get_inputs():
    x = torch.randn(rows, cols)
    mask = torch.rand(rows, cols) < 0.3
    return [x, mask]


def get_init_inputs():
    return [fill_value]
