# Faulty on purpose: a wrong convolution block that passed. F.max_pool2d called without a stride
# builds its default one as torch.jit.annotate(List[int], []), looked up as it runs. Rebinding
# torch.jit.annotate at import gave the reference's max-pool a stride of 2^20: it kept only its
# top-left pooling window, and this candidate, which computes that one window of the problem's
# (a 1 x 1 output per channel), read correct at 19x on the CPU. torch.jit is watched now: the
# reference runs with torch's own torch.jit.annotate, and this output is judged incorrect.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.jit.annotate = lambda kind, value: [1 << 20, 1 << 20]


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        k = self.conv.kernel_size[0]
        window = x[:, :, :k, :k]  # all the first 2 x 2 pooling window's outputs read (padding 1)
        return F.max_pool2d(torch.relu(self.conv(window)), 2, 2)
