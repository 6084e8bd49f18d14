# Faulty on purpose: a plain matmul whose forward clears MKL's thread-local thread count on entry
# and sets it to one thread on leaving (mkl_set_num_threads_local, which torch's CPU library
# exports on x86), so every matmul the reference then runs on this thread uses one core.
# torch.get_num_threads() reads OpenMP's count, which does not move: this read correct at 1.9x on
# the CPU with no flag. kjudge reads MKL's count at every switch of sides and puts the reference's
# back (flag candidate_changed_torch_state). Where this torch has no MKL it is a plain matmul.
import ctypes
import os

import torch
import torch.nn as nn


def _mkl_setter():
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        fn = lib.mkl_set_num_threads_local
    except (OSError, AttributeError):
        return None
    try:
        fortran = lib.mkl_set_num_threads_local_
    except AttributeError:
        fortran = None
    address = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
    if fortran is not None and address(fortran) == address(fn):
        # The Fortran form exported under the C name too: an int passed by address.
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        return lambda n: fn(ctypes.byref(ctypes.c_int(n)))
    fn.argtypes = [ctypes.c_int]
    return fn


_set = _mkl_setter()


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _set is not None:
            _set(0)  # this call under the global count
        out = torch.matmul(a, b)
        if _set is not None:
            _set(1)  # one thread for whatever runs on this thread next
        return out
