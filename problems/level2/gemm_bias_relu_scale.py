"""Level 2: fused chain nn.Linear (GEMM + bias) -> ReLU -> multiply by a constant.

Exercises: a GEMM epilogue fusion; parameters `linear.weight` (out, in) and `linear.bias` (out); a
float init input. The batch jitters; the feature sizes are tied to the weights and do not.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x @ W^T + b) * scale."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=True)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * self.scale


batch = 512
in_features = 1024
out_features = 2048
scale = 1.5


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = torch.randn(p.jitter_int(batch), in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale]
