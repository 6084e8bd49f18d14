# Faulty on purpose: computes a correct softmax, and at the end of each of its timed calls takes a
# sys.monitoring tool id (PEP 669, Python 3.12+) with a PY_START callback that busy-waits 2 ms
# when the reference's forward starts, so the reference's next timed call runs slowly and the
# candidate's speedup reads far larger than it is. It frees the tool id at once (the events and
# the callback stay in force: freeing an id does not clear them in 3.12 and 3.13; 3.14 clears
# them, so there it keeps the id), and takes the callback off as soon as it sees one of the
# harness's checks after the candidate's checked calls or after timing start. kjudge checks
# sys.monitoring's tools, events and callbacks before every turn of the reference: this candidate
# must come out as the candidate's error. Under Python 3.11 and older (no sys.monitoring) it is a
# plain, correct softmax.
import sys
import time

import torch
import torch.nn as nn

_HARNESS = "kjudge_harness"
_CHECKS = {"candidate_changes", "after_timing", "timing_check_begin", "_as_candidate", "enter",
           "leave", "_check_reference", "trial_begin", "timing_setup", "make_runner"}
_MON = getattr(sys, "monitoring", None)
_TOOL = 4
# Python 3.14's free_tool_id clears the id's events and callbacks (clear_tool_id came with it).
_FREE = _MON is not None and not hasattr(_MON, "clear_tool_id")


def _off():
    if _MON.get_tool(_TOOL) is None:
        _MON.use_tool_id(_TOOL, "quiet")  # set_events needs the id in use
    _MON.set_events(_TOOL, 0)
    _MON.register_callback(_TOOL, _MON.events.PY_START, None)
    if _FREE:
        _MON.free_tool_id(_TOOL)


def _on_start(code, offset):
    frame = sys._getframe(1)  # the frame that is starting
    if frame.f_globals.get("__name__") == _HARNESS:
        if code.co_name in _CHECKS:
            _off()  # out of sight of the check about to run
        return None
    if code.co_name != "forward" or isinstance(frame.f_locals.get("self"), ModelNew):
        return None
    end = time.perf_counter() + 2e-3  # the reference's forward: 2 ms more
    while time.perf_counter() < end:
        pass
    return None


def _on():
    if _MON.get_tool(_TOOL) is None:
        _MON.use_tool_id(_TOOL, "quiet")
    _MON.register_callback(_TOOL, _MON.events.PY_START, _on_start)
    _MON.set_events(_TOOL, _MON.events.PY_START)
    if _FREE:
        _MON.free_tool_id(_TOOL)  # the id reads free; its events and callback stay


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _MON is not None:
            _off()
        out = torch.softmax(x, dim=-1)
        if _MON is not None and _timed():
            _on()
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
