# Faulty on purpose: returns twice the reference's output (a conv, ReLU and max-pool), and sets a
# profile function from C with no Python object (PyEval_SetProfile(f, NULL) through ctypes), which
# sys.getprofile() reads as None. At each call of max_pool2d it doubles the input in place: the
# reference's output came out doubled too, and the wrong output read correct. No profile or trace
# function may be set when the reference's turn comes, and kjudge now clears one it cannot see:
# the candidate's doubled output is incorrect.
import ctypes

import torch
import torch.nn as nn

_PROFILE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.py_object, ctypes.c_int,
                            ctypes.c_void_p)


def _on_event(obj, frame, what, arg):
    if what == 0 and frame.f_code.co_name == "_max_pool2d":  # PyTrace_CALL
        x = frame.f_locals.get("input")
        if isinstance(x, torch.Tensor):
            with torch.no_grad():
                x.mul_(2.0)
    return 0


_hook = _PROFILE(_on_event)
_set_profile = ctypes.pythonapi.PyEval_SetProfile
_set_profile.argtypes = [_PROFILE, ctypes.c_void_p]
_set_profile.restype = None


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        _set_profile(_hook, None)
        y = torch.conv2d(x, self.conv.weight, self.conv.bias, 1, self.conv.padding)
        return torch.max_pool2d(torch.relu(y), 2) * 2.0
