# FAULTY (for timing only): correct softmax, but every call draws from the device's random
# generator and then waits for the host (.item()). Its CUDA graph capture fails on the wait after
# the generator joined the capture; on torch 2.11 that left the generator counting for a capture
# that no longer exists, and the next eager draw raised, until kjudge reset it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        draw = torch.rand((), device=x.device)  # in [0, 1)
        if not bool((draw < 1).item()):
            raise ValueError("torch.rand left [0, 1)")
        return torch.softmax(x, dim=-1)
