# Faulty on purpose: a correct softmax that at import turns transparent huge pages off for the
# whole worker (prctl PR_SET_THP_DISABLE), so that where the system gives huge pages each fresh
# allocation faults in 4 KiB pages instead of 2 MiB ones, the reference's too. The setting is the
# process's, outside torch's: kjudge reads it at every switch of sides and puts the reference's
# back (flag candidate_changed_torch_state).
import ctypes

import torch
import torch.nn as nn

_PR_SET_THP_DISABLE = 41
ctypes.CDLL(None).prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
