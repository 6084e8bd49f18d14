# Faulty on purpose: correct, but on its tenth call, after the correctness trials, it changes a
# global setting of torch (the CPU thread count), which the reference's timed samples would then
# run under. kjudge finds the change after the timed samples: it must come out as the
# candidate's error, with no figures.
import torch
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _calls[0] += 1
        if _calls[0] == 10:
            torch.set_num_threads(max(1, torch.get_num_threads() // 2) if
                                  torch.get_num_threads() > 1 else 2)
        return torch.softmax(x, dim=-1)
