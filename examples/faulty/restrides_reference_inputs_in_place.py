# Faulty on purpose: on its first timed call it reaches into kjudge's harness (through
# sys.modules) and restrides each of the reference's timing inputs in place to column-major
# strides (Tensor.as_strided_: the same tensor object, the same storage), so the reference's
# softmax over rows would read strided memory and run slower, and the candidate's speedup would
# read larger than it is (2.89x and 2.96x host wall for the same softmax, on the CPU). The
# rewrite between samples (torch.mul(..., out=)) keeps an output's strides when its shape
# already matches, so the restride stayed. kjudge now puts each working copy back in the layout
# it made before every rewrite. The candidate watches for that in its later timed calls; if it
# never sees a copy put back, it returns softmax * 2 from then on (the check after timing then
# fails it). With kjudge putting copies back it must come out correct.
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
        self.put_back = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        timed = _timed()
        copies = [inputs[0] for inputs in sys.modules[_HARNESS]._timing_work["reference"]]
        if timed and not self.restrided:
            for t in copies:
                t.as_strided_(t.shape, (1, t.shape[0]))
            self.restrided = True
        elif timed and not self.put_back:
            self.put_back = any(t.stride() != (1, t.shape[0]) for t in copies)
        if self.restrided and not self.put_back and not timed:
            return torch.softmax(x, dim=-1) * 2.0  # the restride was never undone
        return torch.softmax(x, dim=-1)
