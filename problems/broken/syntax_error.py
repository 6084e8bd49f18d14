# BROKEN: a syntax error (unclosed parenthesis in forward); the file cannot be imported.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
