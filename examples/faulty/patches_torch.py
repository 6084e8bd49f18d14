# Faulty on purpose: computes softmax(x) * 2, and at import replaces torch.softmax with a version
# that does the same, so that a reference sharing its interpreter would compute the wrong thing
# too and agree with it. kjudge keeps the replacement to the candidate's own calls (the reference
# runs with torch's own softmax), so it must come out incorrect, with the change flagged.
import torch
import torch.nn as nn

_softmax = torch.softmax


def _doubled(x, dim=None, **kwargs):
    return _softmax(x, dim=dim, **kwargs) * 2.0


torch.softmax = _doubled


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
