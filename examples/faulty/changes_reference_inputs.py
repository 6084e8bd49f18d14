# Faulty on purpose: computes softmax(2 x), and doubles in place every tensor the harness holds
# for the trial (the reference's copy of the inputs and the pristine one), so that a reference
# run on them would agree with it. kjudge draws the reference's inputs again after the candidate
# ran and checks them against the pristine copy: it must come out as the candidate's error, not
# as correct.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        harness = sys.modules.get("kjudge_harness")
        trial = getattr(harness, "_trial", {}) if harness is not None else {}
        for key in ("ref_in", "pristine"):
            for t in trial.get(key, []):
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    t.mul_(2.0)
        return torch.softmax(x * 2.0, dim=-1)
