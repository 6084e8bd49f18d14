# BROKEN: get_inputs() nests its tensors in a list, which kjudge's per-input copies, rescaling and
# modification checks would not reach.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, xs) -> torch.Tensor:
        return torch.softmax(xs[0] + xs[1], dim=-1)


def get_inputs():
    return [[torch.randn(16, 16), torch.randn(16, 16)]]


def get_init_inputs():
    return []
