# Faulty on purpose: a correct LayerNorm, and a sleeping property put on the class of
# torch.backends.cudnn (a CudnnModule): F.layer_norm reads torch.backends.cudnn.enabled on every
# call, also on the CPU, so the property ran inside the reference's nn.LayerNorm. It slept 3 ms
# there (it returns the true value, so kjudge's own reads of the setting saw nothing), while
# this candidate calls torch.layer_norm itself and never reads it: correct at 5-6x on the CPU.
# (Returning a string there instead made the reference raise, and the problem was blamed.)
# torch.backends' modules and their classes are watched now: the property is the candidate's
# alone, and the speedup reads about 1x.
import sys
import time

import torch
import torch.nn as nn

_get, _set = torch._C._get_cudnn_enabled, torch._C._set_cudnn_enabled


def _enabled(self):
    if sys._getframe(1).f_code.co_name == "layer_norm":
        time.sleep(0.003)
    return _get()


type(torch.backends.cudnn).enabled = property(_enabled, lambda self, value: _set(value))


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        ln = self.ln
        return torch.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps, False)
