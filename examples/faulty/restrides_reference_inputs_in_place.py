# Faulty on purpose: computes a correct softmax, and on its first timed call reaches into kjudge's
# harness (through sys.modules) and restrides each of the reference's timing inputs in place to
# column-major strides (Tensor.as_strided_: the same tensor object, the same storage), so the
# reference's softmax over rows would read strided memory and run slower, and the candidate's
# speedup would read larger than it is (2.89x host wall for the same softmax, on the CPU). The
# rewrite between samples (torch.mul(..., out=)) keeps an output's strides when its shape already
# matches. kjudge now puts each working copy back in the layout it made before every rewrite:
# this candidate must come out correct, with a speedup near 1.
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
        self.restrided = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.restrided and _timed():
            harness = sys.modules[_HARNESS]
            for inputs in harness._timing_work["reference"]:
                t = inputs[0]
                t.as_strided_(t.shape, (1, t.shape[0]))
            self.restrided = True
        return torch.softmax(x, dim=-1)
