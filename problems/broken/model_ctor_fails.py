# BROKEN: Model.__init__ raises (nn.Linear gets a negative size from get_init_inputs()).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return [32, -8]
