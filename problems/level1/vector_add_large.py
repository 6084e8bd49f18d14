"""Level 1: elementwise add of two large fp32 vectors (memory bound).

Exercises: bandwidth measurement. Two inputs of 32 Mi elements plus one output move
3 * 32 Mi * 4 B = 384 MiB per call, well above any L2 cache, so the time is DRAM traffic.
Sizes are fixed (no jitter) so the byte count is exact.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """c = a + b."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


n = 32 * 1024 * 1024


def get_inputs():
    a = torch.randn(n)
    b = torch.randn(n)
    return [a, b]


def get_init_inputs():
    return []
