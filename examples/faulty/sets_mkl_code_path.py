# Faulty on purpose: sets MKL_CBWR=COMPATIBLE at import. MKL reads it once, at its first call,
# which was the reference's first matmul: from then on every sgemm of the reference's ran MKL's
# slow code path, while this candidate computes the same product through oneDNN (a 1x1
# convolution), which does not read it: 6.9x on the CPU, unflagged. kjudge has MKL (and oneDNN)
# read the environment before the candidate's import, and keeps the process environment to the
# candidate's calls as any setting.
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ["MKL_CBWR"] = "COMPATIBLE"
# A first MKL call of its own, so that MKL reads the variable now, in the candidate's import,
# where kjudge cannot keep it from the reference, unless MKL has read the environment before.
torch.mm(torch.ones(4, 4), torch.ones(4, 4))


class ModelNew(nn.Module):
    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        # C = A B as a convolution: input (1, K, M, 1), one 1x1 filter per column of B.
        y = F.conv2d(a.t().reshape(1, k, m, 1), b.t().reshape(n, k, 1, 1))
        return y.reshape(n, m).t()
