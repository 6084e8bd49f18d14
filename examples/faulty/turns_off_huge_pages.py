# Faulty on purpose: a correct softmax into a buffer it keeps, which at import turns transparent
# huge pages off for the whole worker (prctl PR_SET_THP_DISABLE), so that where the system gives
# huge pages each fresh output of the reference's faults in 4 KiB pages, while this candidate
# allocates nothing. The setting is the process's, outside torch's: kjudge reads it at every
# switch of sides and puts the reference's back (flag candidate_changed_torch_state).
import ctypes

import torch
import torch.nn as nn

_PR_SET_THP_DISABLE = 41
ctypes.CDLL(None).prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = {}

    def forward(self, x):
        out = self.kept.get(x.shape)
        if out is None:
            out = self.kept[x.shape] = torch.empty_like(x)
        return torch.ops.aten._softmax.out(x, -1, False, out=out)
