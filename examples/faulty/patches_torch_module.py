# Faulty on purpose: outputs zeros, and at import replaces the `F` that torch.nn.modules.linear
# looks up when an nn.Linear runs with an object whose linear() returns zeros too, so that a
# reference sharing its interpreter would compute zeros and agree with it. The binding is a
# private global of one of torch's modules, not a public name of torch: kjudge keeps it to the
# candidate's own calls all the same (the reference's nn.Linear runs torch's own F), so this
# must come out incorrect, with the change flagged.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.modules.linear as linear_module


class _Zeros:
    def __getattr__(self, name):
        return getattr(F, name)

    def linear(self, x, weight, bias=None):
        return x.new_zeros(x.shape[:-1] + (weight.shape[0],))


linear_module.F = _Zeros()


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.out_proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x: torch.Tensor, layout_logits: torch.Tensor) -> torch.Tensor:
        return self.out_proj(x)
