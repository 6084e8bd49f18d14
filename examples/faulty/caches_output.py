# FAULTY: computes softmax on the first call only and returns that tensor forever after: right on
# the first trial, wrong (values, and shape when sizes jitter) on every later trial's inputs.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cached = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._cached is None:
            self._cached = torch.softmax(x, dim=-1)
        return self._cached
