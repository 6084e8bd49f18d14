# FAULTY: calls os._exit(3) in forward: the worker vanishes with exit status 3 and no exception.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os._exit(3)
        return torch.softmax(x, dim=-1)
