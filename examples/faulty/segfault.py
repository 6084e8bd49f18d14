# FAULTY: dereferences a null pointer in forward; the process dies with SIGSEGV.
import ctypes

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctypes.string_at(0)
        return torch.softmax(x, dim=-1)
