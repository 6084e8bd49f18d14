# Faulty on purpose: the reference's matmul, leaving cyclic garbage whose finaliser pins torch
# to one thread whenever the cycle collector finds it. Found in the reference's turn, the setting
# was taken for the reference's own (1.93x for the same matmul). The collector's automatic
# passes are now held off while the reference's state is in force: the finaliser runs in the
# candidate's turns, and its change is flagged and kept to the candidate's calls (1.0x), or,
# where it runs in a timed turn, is a change made while timed: the candidate's runtime error.
import torch
import torch.nn as nn


class _Trap:
    def __init__(self):
        self.me = self

    def __del__(self):
        torch.set_num_threads(1)


class ModelNew(nn.Module):
    def forward(self, a, b):
        for _ in range(50):
            _Trap()
        threads = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            return torch.matmul(a, b)
        finally:
            torch.set_num_threads(threads)
