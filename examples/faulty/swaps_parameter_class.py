# Faulty on purpose (for problems/level1/layernorm.py): computes layer_norm(x) * 2, and in its
# constructor finds the reference model (built before it) and sets the class of its LayerNorm's
# weight to a Parameter subclass whose __torch_function__ doubles what layer_norm returns. The
# weight stays the same object with the same values; only its class changed, and with it what
# every reference call computes. kjudge's watch of the reference model holds each entry's class:
# the candidate's error.
import gc

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Meta(type(nn.Parameter)):
    # Says it equals any class: a check that compared classes with == took the swapped class for
    # the original (correct again); kjudge compares them by identity.
    def __eq__(cls, other):
        return True

    __hash__ = type.__hash__


class _Doubling(nn.Parameter, metaclass=_Meta):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        return out * 2.0 if func is F.layer_norm else out


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        for o in gc.get_objects():
            if isinstance(o, nn.Module) and type(o).__name__ == "Model" and hasattr(o, "ln"):
                o.ln.weight.__class__ = _Doubling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ln = self.ln
        return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps) * 2.0
