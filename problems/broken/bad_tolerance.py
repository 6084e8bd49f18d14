# BROKEN: a per-problem tolerance that is not a finite number >= 0.
import torch
import torch.nn as nn

KJUDGE_ATOL = float("nan")


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
