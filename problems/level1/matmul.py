"""Level 1: dense fp32 matrix multiply, C = A @ B with fixed square sizes.

Exercises: a compute-bound op, plain fp32 tolerance on outputs of magnitude ~sqrt(K).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for A of shape (M, K) and B of shape (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 1024
K = 1024
N = 1024


def get_inputs():
    a = torch.randn(M, K)
    b = torch.randn(K, N)
    return [a, b]


def get_init_inputs():
    return []
