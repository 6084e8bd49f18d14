"""Candidate for problems/level2/gemm_bias_relu_scale.py: bias folded into addmm, ReLU and scale
done in place on the GEMM's output. Same parameter names as the reference (`linear.*`)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=True)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return y.relu_().mul_(self.scale)
