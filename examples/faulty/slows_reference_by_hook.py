# Faulty on purpose: computes a correct softmax, and at the end of each of its timed calls sets a
# profile hook that busy-waits 2 ms when the reference's forward is called, so the reference's
# next timed call runs slowly and the candidate's speedup reads far larger than it is (1.46x
# host wall for the same softmax, on the CPU). The hook keeps out of sight of the checks that
# ran only after the candidate's checked calls and after timing: it is never set by a checked
# call (those are not made from the harness's timing runner), and it takes itself off as soon
# as it sees the harness start one of those checks. kjudge now checks for hooks and modes
# before every turn of the reference: this candidate must come out as the candidate's error.
import sys
import time

import torch
import torch.nn as nn

_HARNESS = "kjudge_harness"
# The harness functions that check the candidate's reach after its checked calls and after
# timing (and start the calls around them): on seeing one, the hook takes itself off.
_CHECKS = {"candidate_changes", "after_timing", "timing_check_begin", "_as_candidate", "enter",
           "leave", "_check_reference", "trial_begin", "timing_setup", "make_runner"}


def _slow(frame, event, arg):
    if event not in ("call", "c_call"):
        return
    if frame.f_globals.get("__name__") == _HARNESS:
        if event == "call" and frame.f_code.co_name in _CHECKS:
            sys.setprofile(None)  # out of sight of the check about to run
        return
    if (event != "call" or frame.f_code.co_name != "forward"
            or isinstance(frame.f_locals.get("self"), ModelNew)):
        return
    end = time.perf_counter() + 2e-3  # the reference's forward: 2 ms more
    while time.perf_counter() < end:
        pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys.setprofile(None)
        out = torch.softmax(x, dim=-1)
        if _timed():
            sys.setprofile(_slow)
        return out


def _timed():
    """Whether this call came from the harness's timing runner (make_runner's run(), which kjudge
    calls with no Python frame above it), not from a checked call."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == _HARNESS:
            return frame.f_code.co_name == "run" and frame.f_back is None
        frame = frame.f_back
    return False
