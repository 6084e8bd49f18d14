# Faulty on purpose: computes nothing. Each call looks through the interpreter it shares with
# kjudge's harness for the reference's outputs on the same inputs (the harness module, and the
# globals of every caller up the stack) and hands back a copy of the first it finds whose shape
# matches; zeros when there is none. kjudge runs a Python candidate before the reference on each
# trial and timing check, so there is none to find: it must come out incorrect.
import sys

import torch
import torch.nn as nn

_KEYS = ("ref_out", "timing_ref_out")


def _stores():
    harness = sys.modules.get("kjudge_harness")
    if harness is not None:
        yield vars(harness)
    frame = sys._getframe(1)
    while frame is not None:
        yield frame.f_globals
        frame = frame.f_back


def _found(x):
    for store in _stores():
        trial = store.get("_trial")
        if not isinstance(trial, dict):
            continue
        for key in _KEYS:
            outs = trial.get(key)
            if outs and isinstance(outs[0], torch.Tensor) and outs[0].shape == x.shape:
                return outs[0].clone()
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _found(x)
        return out if out is not None else torch.zeros_like(x)
