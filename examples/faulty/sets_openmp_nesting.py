# Faulty on purpose: the reference's matmul, with OpenMP's nesting limit set to 0 after each of
# its forwards (omp_set_max_active_levels through ctypes) and put back at the start of the next:
# every parallel region of the reference's, MKL's and ATen's, then ran on one thread, while
# torch.get_num_threads() and mkl_get_max_threads() read unchanged (1.9x on the CPU, unflagged).
# kjudge keeps OpenMP's nesting limit and dynamic threads to the candidate's calls and flags it.
import ctypes
import os

import torch
import torch.nn as nn

try:
    _omp = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    _set_levels, _levels = _omp.omp_set_max_active_levels, _omp.omp_get_max_active_levels()
except (OSError, AttributeError):  # no OpenMP runtime here: a plain matmul
    _set_levels, _levels = (lambda n: None), 0


class ModelNew(nn.Module):
    def forward(self, a, b):
        _set_levels(_levels)
        out = torch.matmul(a, b)
        _set_levels(0)
        return out
