# FAULTY (for the GPU's lock only): a correct softmax whose module code runs a kernel on the GPU
# when it is imported (a table built at import). kjudge takes the GPU's lock before that kernel
# runs, not after the import, so it cannot run beside another evaluation's timing.
import torch
import torch.nn as nn

_ONES = torch.ones(1024, device="cuda") * 1.0  # a launch at import


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) * _ONES[0]
