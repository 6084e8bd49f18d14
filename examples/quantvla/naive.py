"""Candidate for problems/level2/quantvla_selective_layout_fusion.py in plain PyTorch: the same
operations with fewer temporaries (the blend as x + alpha * (xq - x) would change the rounding, so
the reference's association is kept), bias folded into addmm. Parameters keep the reference's names
(`out_proj.weight`, `out_proj.bias`). Eager, so still about a dozen kernels."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.out_proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x: torch.Tensor, layout_logits: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        alpha = torch.sigmoid(layout_logits).reshape(B * T, 1)
        flat = x.reshape(B * T, D)
        # Same expression as the reference so that ties round the same way on the same device.
        scale = flat.abs().amax().clamp(min=1e-8) / 127.0
        xq = torch.round(flat / scale).clamp_(-127.0, 127.0).mul_(scale)
        mixed = (alpha * xq).add_((1.0 - alpha) * flat)
        out = torch.addmm(self.out_proj.bias, mixed, self.out_proj.weight.t())
        return out.reshape(B, T, D)
