# Faulty on purpose: computes a correct matmul, and on its first timed call reaches into kjudge's
# harness (through sys.modules) and gives each of the reference's timing inputs float16 data of
# the same shape (by assigning the tensor's .data: the same tensor object), so the reference is
# timed in float16 (far slower on the CPU) and the candidate's speedup reads larger than it is;
# it puts the float32 data back in the first call kjudge checks after timing. kjudge puts a
# changed working copy back on its own storage before every rewrite, which keeps the dtype: it now
# checks the dtype and device after that, and this candidate must come out as the candidate's
# error.
import sys

import torch
import torch.nn as nn

_HARNESS = "kjudge_harness"


def _timed():
    """Whether this call came from the harness's timing runner (make_runner's run(), which kjudge
    calls with no Python frame above it), not from a checked call."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == _HARNESS:
            return frame.f_code.co_name == "run" and frame.f_back is None
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.saved = None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        sets = sys.modules[_HARNESS]._timing_work["reference"]
        timed = _timed()
        if self.saved is None and timed:
            self.saved = [[t.data for t in inputs] for inputs in sets]
            for inputs in sets:
                for t in inputs:
                    t.data = torch.zeros(t.shape, dtype=torch.float16, device=t.device)
        elif self.saved is not None and not timed:
            for inputs, data in zip(sets, self.saved):
                for t, d in zip(inputs, data):
                    t.data = d
            self.saved = None
        return torch.matmul(a, b)
