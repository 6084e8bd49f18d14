# FAULTY: computes softmax in place in its input and returns that input: the values are right, but
# the caller's tensor is overwritten (and the output aliases it).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True))
        x.exp_()
        x.div_(x.sum(dim=-1, keepdim=True))
        return x
