# FAULTY: raises ValueError in __init__, so ModelNew cannot be built.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("ModelNew refuses to be constructed (on purpose)")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
