# Faulty on purpose: computes softmax(x) * 2, and at import gives the torch module a class of its
# own whose `softmax` property returns a doubled softmax. A module's class is looked up before
# its dict, so torch.softmax then reads the property for every caller, the reference included,
# without any binding in torch's dict changing; and the class ignores a write of `__class__`.
# kjudge watches each namespace's class as one of its bindings, sets it back through object's own
# slot, and keeps the change to the candidate's calls: incorrect, with the change flagged.
import types

import torch
import torch.nn as nn

_softmax = torch.__dict__["softmax"]


def _doubled(x, dim=None, **kwargs):
    return _softmax(x, dim=dim, **kwargs) * 2.0


class _Torch(types.ModuleType):
    softmax = property(lambda self: _doubled)

    def __setattr__(self, name, value):
        # Ignores a write of the class: kjudge's first restore, setattr(torch, "__class__", ...),
        # went through here and did nothing (correct again). It sets the class through object's
        # own slot now.
        if name != "__class__":
            super().__setattr__(name, value)


torch.__class__ = _Torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
