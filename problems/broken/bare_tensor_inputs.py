# BROKEN: get_inputs() returns a bare tensor instead of a list of inputs (it would be split along
# its first dimension into 16 inputs).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return torch.randn(16, 16)


def get_init_inputs():
    return []
