# BROKEN: Model.forward raises RuntimeError("reference forward failed on purpose") on every call.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("reference forward failed on purpose")


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
