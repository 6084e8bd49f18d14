# FAULTY: softmax + 1e-3 everywhere: ten times the fp32 tolerance, small enough to look plausible.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) + 1e-3
