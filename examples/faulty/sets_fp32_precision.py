# Sets torch's newer TF32 switch at import (torch.backends.cuda.matmul.fp32_precision = "tf32";
# after it, reading the older allow_tf32 flag raises) and computes a correct softmax. kjudge must
# keep the change to the candidate's calls, flag it, and not mistake the older flag it cannot
# read for a change made while the candidate was timed: the result is correct.
import torch
import torch.nn as nn

if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
    torch.backends.cuda.matmul.fp32_precision = "tf32"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
