# Faulty on purpose: computes softmax(x) * 2, and at import gives the torch module a class of its
# own whose `softmax` property returns a doubled softmax. A module's class is looked up before
# its dict, so torch.softmax then reads the property for every caller, the reference included,
# without any binding in torch's dict changing. kjudge watches each namespace's class as one of
# its bindings and keeps the change to the candidate's calls: incorrect, with the change flagged.
import types

import torch
import torch.nn as nn

_softmax = torch.__dict__["softmax"]


def _doubled(x, dim=None, **kwargs):
    return _softmax(x, dim=dim, **kwargs) * 2.0


class _Torch(types.ModuleType):
    softmax = property(lambda self: _doubled)


torch.__class__ = _Torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
