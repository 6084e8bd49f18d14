# Faulty on purpose: outputs zeros, and at import wraps torch.nn.Module._call_impl (the private
# method through which every module's call runs its forward) so that the problem's own Model
# returns zeros too: a reference sharing its interpreter would agree with it. The method is a
# private attribute of one of torch's classes: kjudge keeps it to the candidate's own calls all
# the same (the reference runs torch's own _call_impl), so this must come out incorrect, with
# the change flagged.
import torch
import torch.nn as nn

_own_call = nn.Module._call_impl


def _call_impl(self, *args, **kwargs):
    out = _own_call(self, *args, **kwargs)
    return torch.zeros_like(out) if type(self).__name__ == "Model" else out


nn.Module._call_impl = _call_impl


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
