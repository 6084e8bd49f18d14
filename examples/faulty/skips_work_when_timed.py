# Faulty on purpose: computes a @ b, except inside kjudge's timed samples, which it recognises by
# the harness's frames above its forward (the function that makes a timed call), and where it
# returns an input and does no work. Every trial passes, and its timed figures would show a large
# speedup; the check after timing calls it exactly as a timed sample is called (the same
# function, from the same place), so it skips the work there too and comes out incorrect.
import sys

import torch
import torch.nn as nn


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == "<kjudge harness>":
            return frame.f_code.co_name == "run" and "sets" in frame.f_code.co_freevars
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if _timed():
            return a
        return torch.matmul(a, b)
