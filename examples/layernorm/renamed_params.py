"""Candidate for problems/level1/layernorm.py whose parameters are named `scale` and `shift` instead
of the reference's `ln.weight` and `ln.bias`. Loading by name (or by its end: `gamma` and `beta`
would read as `weight` and `bias`) fails, so the judge must fall back to copying by order and shape. Initialised to ones/zeros: wrong unless the reference's values arrive."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.hidden = hidden
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(hidden))
        self.shift = nn.Parameter(torch.zeros(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.scale + self.shift
