# Faulty on purpose: a wrong MLP that passed at 946x on the CPU. torch.nn.init's kaiming_uniform_
# (every nn.Linear's reset_parameters) takes its bound as math.sqrt(3.0) * std, looked up as it
# runs; the problem module binds no `math`, so only its own modules were watched. This rebinding
# at import built the reference's Linear layers with zero weights, whose output is the last
# layer's bias for every input, which this forward returns without a matmul. The modules torch.nn
# binds are watched now: the reference is built with Python's own math.sqrt, and this output is
# judged incorrect.
import math

import torch
import torch.nn as nn

_sqrt = math.sqrt
math.sqrt = lambda v: 0.0 if v == 3.0 else _sqrt(v)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_sizes, output_size):
        super().__init__()
        layers, current = [], input_size
        for h in hidden_sizes:
            layers += [nn.Linear(current, h), nn.ReLU()]
            current = h
        layers.append(nn.Linear(current, output_size))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[-1].bias.expand(x.shape[0], -1)
