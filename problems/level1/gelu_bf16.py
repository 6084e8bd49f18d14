"""Level 1: exact (erf) GELU on a bf16 tensor, output in bf16.

Exercises: a low-precision input and output dtype (tolerance 1e-2); a candidate must keep the output
dtype bf16.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """y = gelu(x), approximate='none', in x's dtype (bf16)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


batch = 2048
dim = 4096


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = (2.0 * torch.randn(p.jitter_int(batch), dim)).to(torch.bfloat16)
    return [x]


def get_init_inputs():
    return []
