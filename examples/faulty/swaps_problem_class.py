# Faulty on purpose: computes softmax(x) * 2, and at import gives the problem's module a class of
# its own whose `Model` property is a Model that doubles as well. The module's dict is untouched,
# but an attribute lookup (kjudge's `Model(*get_init_inputs())`) finds the property first, so
# the reference built after the candidate's import would compute the same wrong thing. kjudge
# watches the problem module's class with its bindings: the candidate's error.
import sys
import types

import torch
import torch.nn as nn


def _swap(module):
    real = module.__dict__["Model"]

    class Model(real):
        def forward(self, *args, **kwargs):
            return super().forward(*args, **kwargs) * 2.0

    class _Problem(types.ModuleType):
        Model = property(lambda self: Model)

    module.__class__ = _Problem


for _module in list(sys.modules.values()):
    if isinstance(_module, types.ModuleType) and {"Model", "get_inputs"} <= set(vars(_module)):
        _swap(_module)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) * 2.0
