"""Level 2: fused chain nn.Conv2d (3x3, padding 1, with bias) -> ReLU -> 2x2 max pool.

Exercises: a convolution with 4-D NCHW inputs and parameters `conv.weight` (Cout, Cin, 3, 3) and
`conv.bias` (Cout). Batch and spatial size jitter; channel counts are tied to the weights and do not.
The jittered spatial size may be odd; max_pool2d floors it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """y = max_pool2d(relu(conv2d(x)), 2)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(torch.relu(self.conv(x)), kernel_size=2)


batch = 16
in_channels = 16
out_channels = 64
height = 64
kernel_size = 3


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    side = p.jitter_int(height)  # square image: one draw for both height and width
    x = torch.randn(p.jitter_int(batch), in_channels, side, side)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
