# FAULTY: for problems/level1/softmax.py, returns one zero expanded to 2^15 x 2^15: the wrong
# shape, 2^30 elements (4 GiB written out) in 4 bytes of memory. kjudge says the shape is wrong
# from the elements the expansion reaches, without writing it out.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros((), device=x.device).expand(2**15, 2**15)
