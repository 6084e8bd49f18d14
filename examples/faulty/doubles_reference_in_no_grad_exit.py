# Faulty on purpose: returns twice the softmax for problems/level1/softmax.py. At import it
# replaces __exit__ of torch.no_grad's class (a class attribute: torch.no_grad stays the same
# object) with one that looks up its caller's frame and doubles, in place, the reference's output
# kept there. kjudge ran every call of the reference inside `with torch.no_grad():`, so the
# reference's outputs were doubled too and this read correct. kjudge now switches autograd off
# by torch's C function, and the replaced method is kept to the candidate's calls: incorrect.
import sys

import torch
import torch.nn as nn

_no_grad = torch.no_grad
_exit = _no_grad.__exit__


def _doubling_exit(self, *exc):
    done = _exit(self, *exc)
    caller = sys._getframe(1)
    local = caller.f_locals
    found = local.get("out")
    if found is None and "last" in local and type(local.get("model")).__name__ == "Model":
        found = local["last"][0]
    if isinstance(found, torch.Tensor):
        found.mul_(2.0)
    return done


_no_grad.__exit__ = _doubling_exit


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) * 2.0
