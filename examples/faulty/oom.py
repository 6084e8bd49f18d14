# FAULTY: asks for 1 PiB on the input's device in forward. More than any GPU holds (torch raises
# torch.OutOfMemoryError) and more than the 128 TiB user address space of x86-64/arm64 Linux, so on
# CPU the allocation fails at once with RuntimeError even under memory overcommit: nothing is touched.
import torch
import torch.nn as nn

HUGE_BYTES = 1 << 50


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(HUGE_BYTES, dtype=torch.uint8, device=x.device)
        return torch.softmax(x, dim=-1) + scratch[:1].float() * 0
