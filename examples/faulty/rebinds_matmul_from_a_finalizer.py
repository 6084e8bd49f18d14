# Faulty on purpose: returns zeros, and hangs a finaliser on kjudge's pristine copies of the
# trial's inputs (found through the harness's module) that rebinds torch.matmul to zeros. kjudge
# freed those copies while the reference's state was in force, took the rebinding for the
# reference's own, and the reference computed zeros too: correct. Those frees now run as the
# candidate's code, and the rebinding stays with its calls: incorrect.
import sys
import weakref

import torch
import torch.nn as nn


def _zeros(a, b, *args, **kwargs):
    return torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)


def _rebind():
    torch.matmul = _zeros


class ModelNew(nn.Module):
    def forward(self, a, b):
        harness = sys.modules.get("kjudge_harness")
        trial = getattr(harness, "_trial", None)
        if isinstance(trial, dict):
            for x in trial.get("pristine", ()):
                if isinstance(x, torch.Tensor):
                    weakref.finalize(x, _rebind)
        return torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
