# Faulty on purpose: computes a @ b, except in what it takes for kjudge's timed samples, where it
# returns garbage and does no work. It tells them by torch.initial_seed(): every timed sample seeds
# the generators with its own seed, and consecutive samples' seeds differ by small multiples of
# one step. The post-timing check's samples once had numbers of their own far beyond any timed
# one, so their seeds jumped: it computed honestly from the first jump on, and was judged correct
# with a large speedup. The check's samples now continue the timed ones, seeds included, so it
# skips the work there too and comes out incorrect.
import torch
import torch.nn as nn

_STEP = 7919  # the seeds' step between samples, as read off kjudge's harness


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []
        self.honest = False

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        seed = torch.initial_seed()
        timed = False
        for earlier in self.seen[-4:]:
            d = seed - earlier
            if d != 0 and d % _STEP == 0:
                if abs(d) < _STEP * 10**6:
                    timed = True
                else:
                    self.honest = True  # a jump no timed sample makes: the check
        self.seen.append(seed)
        if timed and not self.honest:
            return torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        return torch.matmul(a, b)
