# Faulty on purpose: computes a @ b only where it guesses it is not timed. A timed turn opens with
# an untimed forward on the previous sample again (the same generator seed as the call before),
# and its timed calls follow at once; so after a repeated seed it returns garbage, doing no work,
# until a call comes a while after the one before it without a repeat, which it takes for the
# post-timing check (each check call follows the reference's check forward) and computes. The
# post-timing check alone judged it correct with the speedup of doing nothing; kjudge now also
# keeps the outputs of timed samples drawn by its secret key and compares them afterwards.
import time

import torch
import torch.nn as nn

_PAUSE_S = 0.005


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last_seed = None
        self.last_call = 0.0
        self.skipping = False

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        now, seed = time.perf_counter(), torch.initial_seed()
        if seed == self.last_seed:
            self.skipping = True  # a turn's opening call: the timed ones follow
            out = torch.matmul(a, b)
        elif self.skipping and now - self.last_call < _PAUSE_S:
            out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        else:
            self.skipping = False
            out = torch.matmul(a, b)
        self.last_seed, self.last_call = seed, time.perf_counter()
        return out
