# Faulty on purpose: the reference's matmul, on two threads, with a finaliser on its input that
# pins torch to one thread when kjudge frees the input (as it readies the next trial, while the
# reference's state is in force). That setting was taken for the reference's own: it ran on one
# thread throughout, and the same matmul read 1.79x. Now the free runs as the candidate's code:
# the setting is its change, kept to its calls and flagged (1.0x).
import weakref

import torch
import torch.nn as nn


def _one_thread():
    torch.set_num_threads(1)


class ModelNew(nn.Module):
    def forward(self, a, b):
        weakref.finalize(a, _one_thread)
        threads = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            return torch.matmul(a, b)
        finally:
            torch.set_num_threads(threads)
