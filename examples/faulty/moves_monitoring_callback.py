# Faulty on purpose: computes a correct softmax, and leaves behind, after each of its timed calls,
# a sys.monitoring callback (PEP 669, Python 3.12+) on CALL events under tool id 5. The callback
# waits for kjudge's check before the reference's turn: when it sees a register_callback call for
# tool 5 (a check that reads the tools one after another has then passed tools 0 to 4), it empties
# tool 5 and puts under tool 0 a PY_START callback that busy-waits 2 ms whenever the reference's
# forward starts, and takes itself off when it sees one of the harness's checks after the
# candidate's checked calls or after timing start. A check that reads one tool at a time sees
# every tool as it was, and the reference's timed calls run slowly. kjudge's check takes every
# callback out before it reads any (then none can run) and finds, putting them back, a slot
# filled meanwhile: this candidate must come out as the candidate's error. Under Python 3.11 and
# older (no sys.monitoring) it is a plain, correct softmax.
import sys
import time

import torch
import torch.nn as nn

_HARNESS = "kjudge_harness"
# The harness functions that check the candidate's reach after its checked calls and after
# timing (and start the calls around them): on seeing one, the slowing callback takes itself off.
_CHECKS = {"candidate_changes", "after_timing", "timing_check_begin", "_as_candidate", "enter",
           "leave", "_check_reference", "trial_begin", "timing_setup", "make_runner"}
_MON = getattr(sys, "monitoring", None)
_WATCH, _SLOW = 5, 0
# Python 3.14's free_tool_id clears the id's events and callbacks (clear_tool_id came with it).
_FREE = _MON is not None and not hasattr(_MON, "clear_tool_id")


def _arm(tool, event, callback):
    """`callback` on `event` for `tool` (None: that event off), the id left free."""
    if _MON.get_tool(tool) is None:
        _MON.use_tool_id(tool, "quiet")  # set_events needs the id in use
    _MON.register_callback(tool, event, callback)
    _MON.set_events(tool, event if callback is not None else 0)
    if _FREE:
        _MON.free_tool_id(tool)


def _slow(code, offset):
    frame = sys._getframe(1)  # the frame that is starting
    if frame.f_globals.get("__name__") == _HARNESS:
        if code.co_name in _CHECKS:
            _arm(_SLOW, _MON.events.PY_START, None)  # out of sight of the check about to run
        return None
    if code.co_name != "forward" or isinstance(frame.f_locals.get("self"), ModelNew):
        return None
    end = time.perf_counter() + 2e-3  # the reference's forward: 2 ms more
    while time.perf_counter() < end:
        pass
    return None


def _watch(code, offset, callable_, arg0):
    if (callable_ is _MON.register_callback and arg0 == _WATCH
            and sys._getframe(1).f_globals.get("__name__") == _HARNESS):  # kjudge's read
        _arm(_WATCH, _MON.events.CALL, None)
        _arm(_SLOW, _MON.events.PY_START, _slow)
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _MON is not None:
            _arm(_SLOW, _MON.events.PY_START, None)
            _arm(_WATCH, _MON.events.CALL, None)
        out = torch.softmax(x, dim=-1)
        if _MON is not None and _timed():
            _arm(_WATCH, _MON.events.CALL, _watch)
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
