# Faulty on purpose: computes softmax(x) * 2, and on its first call replaces the reference model
# that kjudge's harness holds with a copy of itself, so that the reference would compute the
# same wrong thing. kjudge checks what the reference runs with after the candidate's code: it
# must come out as the candidate's error.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        harness = sys.modules.get("kjudge_harness")
        if harness is not None and not isinstance(harness._ref, ModelNew):
            harness._ref = ModelNew()
        return torch.softmax(x, dim=-1) * 2.0
