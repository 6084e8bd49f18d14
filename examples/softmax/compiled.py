"""Candidate for problems/level1/softmax.py: the textbook max-subtract / exp / normalise handed to
torch.compile (Inductor fuses it into one generated kernel; compiled for dynamic shapes, since the
trials jitter both dimensions). Loading torch.compile makes torch's dynamo wrap a few of torch's
own functions (torch.manual_seed, nn.Module.__init__): kjudge keeps that to this candidate's calls
and reports it as an info flag (candidate_changed_torch_state)."""
import torch
import torch.nn as nn


def _softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = torch.compile(_softmax, dynamic=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(x)
