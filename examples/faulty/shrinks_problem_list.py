# Faulty on purpose: one Linear layer in place of the problem's MLP, which passed on the CPU.
# problems/level3/mlp.py builds its Model from the list `hidden_sizes` its module binds
# (get_init_inputs() returns it), and kjudge builds the reference after the candidate's import.
# Emptying that list in place at import (the binding still the same list) had the reference
# built as a single Linear(1024, 256), which this candidate is, with the weights copied by value.
# The contents of the containers the problem binds are checked now, as their bindings are: this
# import is the candidate's error.
import sys
import types

import torch
import torch.nn as nn

for _module in list(sys.modules.values()):
    if isinstance(_module, types.ModuleType) and {"Model", "get_inputs"} <= set(vars(_module)):
        _sizes = vars(_module).get("hidden_sizes")
        if isinstance(_sizes, list):
            _sizes.clear()


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_sizes, output_size):
        super().__init__()
        self.fc = nn.Linear(input_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)
