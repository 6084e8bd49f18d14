# Faulty on purpose: computes softmax(x) correctly, then, in its forward, sets every torch entry
# of sys.modules to None, which makes any later `import torch.<something>` fail. Among the code
# that imports so is torch.manual_seed (`import torch.cuda`), which kjudge calls before the next
# trial's get_inputs(): the failure then read as the problem's (problem_error). kjudge checks
# sys.modules after the candidate's code: the candidate's error.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.softmax(x, dim=-1)
        for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
            sys.modules[name] = None
        return y
