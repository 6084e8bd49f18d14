# FAULTY: forward never returns (a busy loop that holds the GIL); the judge must kill the worker.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            pass
        return torch.softmax(x, dim=-1)
