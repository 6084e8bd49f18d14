# Faulty on purpose: patches the class of the torch function mode that set_default_device pushes,
# sets a default device at import, and computes a correct softmax. kjudge keeps the default
# device to the candidate's calls, so the mode is in force during the candidate's turns, when
# kjudge also rewrites the timing inputs between samples. The patched mode refuses the call that
# rewrite makes (torch.mul(base, factor, out=working_copy)); it stands for one that would skip it
# and see the same inputs sample after sample. The rewrite runs with torch function modes
# disabled, so this candidate must come out correct, with the default device flagged.
import torch
import torch.nn as nn
import torch.utils._device as _device

_original = _device.DeviceContext.__torch_function__


def _refusing(self, func, types, args=(), kwargs=None):
    if func is torch.mul and kwargs and "out" in kwargs:
        raise RuntimeError("torch.mul(..., out=...) ran through this candidate's device mode")
    return _original(self, func, types, args, kwargs)


_device.DeviceContext.__torch_function__ = _refusing
torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
