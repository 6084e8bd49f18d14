"""Level 3: a 3-layer MLP (Linear -> ReLU -> Linear -> ReLU -> Linear).

Exercises: a small network held in nn.Sequential (state_dict keys `layers.0.weight`, `layers.0.bias`,
`layers.2.*`, `layers.4.*`) and a list init input. The batch jitters.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = L3(relu(L2(relu(L1(x)))))."""

    def __init__(self, input_size: int, hidden_sizes: list, output_size: int):
        super().__init__()
        layers = []
        current = input_size
        for h in hidden_sizes:
            layers.append(nn.Linear(current, h))
            layers.append(nn.ReLU())
            current = h
        layers.append(nn.Linear(current, output_size))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


batch = 256
input_size = 1024
hidden_sizes = [2048, 1024]
output_size = 256


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    x = torch.randn(p.jitter_int(batch), input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_sizes, output_size]
