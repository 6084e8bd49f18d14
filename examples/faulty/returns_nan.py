# FAULTY: correct softmax except that every 97th element is NaN.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.softmax(x, dim=-1)
        y.view(-1)[::97] = float("nan")
        return y
