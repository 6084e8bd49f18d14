# Faulty on purpose: replaces torch.mul at import with a version that refuses the call kjudge's
# timing makes to rewrite inputs between samples (torch.mul(base, factor, out=working_copy)), and
# computes a correct softmax. Rebinding a torch function reaches only the candidate's own calls:
# kjudge's rewrite of the inputs is its own work, under the reference's torch state, so this
# candidate must come out correct, with the rebinding flagged. (A candidate that made the rewrite
# do nothing instead would see the same inputs sample after sample and could replay a cached
# output.)
import torch
import torch.nn as nn

_mul = torch.mul


def _mul_without_out(*args, **kwargs):
    if "out" in kwargs:
        raise RuntimeError("torch.mul(..., out=...) ran under this candidate's rebinding")
    return _mul(*args, **kwargs)


torch.mul = _mul_without_out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
