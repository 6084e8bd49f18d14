# Faulty on purpose: returns zeros wrapped in a tensor subclass whose __torch_function__, once
# the reference's outputs exist in the interpreter it shares with kjudge's harness, answers any
# operation on it (the harness's copy to the host among them) with a copy of those outputs.
# kjudge judges a candidate's plain tensors (and nn.Parameter) only, and copies them to the host
# before the reference runs: this one is the candidate's error in its first trial.
import sys

import torch
import torch.nn as nn


def _reference_output(shape):
    harness = sys.modules.get("kjudge_harness")
    trial = getattr(harness, "_trial", {}) if harness is not None else {}
    for key in ("ref_out", "timing_ref_out"):
        outs = trial.get(key)
        if outs and isinstance(outs[0], torch.Tensor) and outs[0].shape == shape:
            return outs[0]
    return None


class Sneaky(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            found = _reference_output(first.shape) if first is not None else None
            if found is not None:
                return found.detach().to("cpu").contiguous()
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x).as_subclass(Sneaky)
