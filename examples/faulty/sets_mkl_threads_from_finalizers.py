# Faulty on purpose: a plain matmul that leaves MKL's thread count as it found it, but hangs a
# finalizer on its own output and one on the reference's last output (which kjudge's timing
# runner keeps until that side's next sample) that each set MKL's thread-local count to one
# thread (mkl_set_num_threads_local, exported by torch's CPU library on x86). The finalizers run
# where kjudge frees those outputs, outside any call: one freed just before the candidate's turn
# began would have its change taken for the reference's own doing, and one freed within the
# reference's turn would stay in force for it. kjudge frees the candidate's output under the
# candidate's state and checks what the reference's free changed before the reference's next
# call: the change must be flagged (candidate_changed_torch_state) and the speedup read about 1x.
# Where this torch has no MKL it is a plain matmul.
import ctypes
import os
import sys
import weakref

import torch
import torch.nn as nn


def _mkl_setter():
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    except OSError:
        return None
    try:
        fn = lib.MKL_Set_Num_Threads_Local  # MKL's C entry: the count by value
        fn.argtypes = [ctypes.c_int]
        return fn
    except AttributeError:
        pass
    try:
        fn = lib.mkl_set_num_threads_local  # the Fortran entry: the count by address
    except AttributeError:
        return None
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    return lambda n: fn(ctypes.byref(ctypes.c_int(n)))


_set = _mkl_setter()


def _one_thread():
    _set(1)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if _set is None:
            return torch.matmul(a, b)
        _set(0)  # this call under the global count
        out = torch.matmul(a, b)
        weakref.finalize(out, _one_thread)
        harness = sys.modules.get("kjudge_harness")
        outputs = getattr(harness, "_run_outputs", None)
        holder = outputs.get("reference") if isinstance(outputs, dict) else None
        if holder is not None and isinstance(holder[0], torch.Tensor):
            weakref.finalize(holder[0], _one_thread)
        return out
