# Faulty on purpose: computes a correct softmax, and on its first timed call reaches into kjudge's
# harness (through sys.modules) and puts in place of each of the reference's timing inputs a
# tensor of the same shape, dtype and values but column-major, so the reference's softmax over
# rows reads strided memory and runs slower: the candidate's speedup would read larger than it
# is. Rewriting the inputs between samples (torch.mul(..., out=)) keeps an output's strides when
# its shape already matches, so the swap survived every rewrite. kjudge now checks before every
# rewrite that each timing input is still the tensor it made: this candidate must come out as
# the candidate's error.
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
        self.swapped = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.swapped and _timed():
            harness = sys.modules[_HARNESS]
            for inputs in harness._timing_work["reference"]:
                inputs[0] = inputs[0].t().contiguous().t()
            self.swapped = True
        return torch.softmax(x, dim=-1)
