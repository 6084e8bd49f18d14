# Faulty on purpose: computes a @ b, except in what it takes for kjudge's timed samples, where it
# returns garbage and does no work. It looks for them by torch.initial_seed(): every timed sample
# seeds the generators with its own seed, and consecutive samples' seeds once differed by small
# multiples of one step. When the post-timing check's samples had numbers of their own far beyond
# any timed one, their seeds jumped: it computed honestly from the first jump on, and was judged
# correct with a 157x speedup. Then the check's samples continued the timed ones, seeds included,
# and it came out incorrect. Now the seeds derive from a secret key and the sample's number: no
# step shows, it computes in every call and is timed as what it is (correct, about 1x).
import torch
import torch.nn as nn

_STEP = 7919  # the seeds' step between samples, as kjudge's harness once had it


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
