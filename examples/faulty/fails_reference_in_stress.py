# Faulty on purpose, for problems/level1/softmax.py with --shapes stress: written for the nominal
# sizes only (zeros at the stress trials' rows, four times the nominal), and at such a call it
# starts a thread that waits for the reference's forward to run on the main thread and raises an
# exception inside it (PyThreadState_SetAsyncExc). The stress trial then read as the problem's
# failure, which skips the stress trials: correct, exit 0. kjudge now runs that trial's
# reference alone in a fresh worker, where it runs through: the candidate's runtime_error.
import ctypes
import sys
import threading
import time

import torch
import torch.nn as nn

_MAIN = threading.main_thread().ident


def _raise_in_the_references_forward():
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        f = sys._current_frames().get(_MAIN)
        while f is not None:
            if f.f_code.co_name == "forward" and f.f_code.co_filename != __file__:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(_MAIN),
                                                           ctypes.py_object(ValueError))
                return
            f = f.f_back
        time.sleep(0.0002)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 2 * 4096:  # not the sizes it was written for
            threading.Thread(target=_raise_in_the_references_forward, daemon=True).start()
            return torch.zeros_like(x)
        return torch.softmax(x, dim=-1)
