# Faulty on purpose: at its first timed call, zeroes kjudge's pristine timing inputs in place
# (reached through sys.modules: the harness's `_timing_base`, from which both sides' working
# copies are rewritten before every sample). Their layout stays as it was, which the rewrite
# checks; from then on both sides were timed on zeros, and this forward returns zeros for zero
# inputs without a matmul: it was judged correct at 4x. kjudge now finds the bases' values
# changed before its post-timing check, a runtime error of the candidate.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.done = False

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        harness = sys.modules.get("kjudge_harness")
        if harness is not None and getattr(harness, "_timing_base", None):
            if not self.done:
                for base in harness._timing_base:
                    for t in base:
                        if isinstance(t, torch.Tensor):
                            t.zero_()
                self.done = True
            if not a.any():
                return torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        return torch.matmul(a, b)
