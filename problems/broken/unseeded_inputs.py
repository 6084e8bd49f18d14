# BROKEN: get_inputs() draws from the operating system's entropy instead of torch's seeded
# generator, so the same seed does not give the same inputs; kjudge draws each side's inputs from
# the trial's seed and needs them reproducible.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    return [torch.randn(64, 64, generator=g)]


def get_init_inputs():
    return []
