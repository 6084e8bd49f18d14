"""Level 3: one pre-norm transformer block: x + MHA(LN(x)), then + MLP(LN(.)), no dropout, no mask.

Exercises: attention (QKV projection, scaled dot-product softmax, output projection), two LayerNorms
and a GELU MLP at small sizes; twelve parameter tensors in six submodules. Sizes are fixed.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm block over x of shape (batch, seq, d_model)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, self.n_heads, hd).transpose(1, 2)
        k = k.view(b, t, self.n_heads, hd).transpose(1, 2)
        v = v.view(b, t, self.n_heads, hd).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(hd), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


batch = 4
seq = 128
d_model = 256
n_heads = 8
d_ff = 1024


def get_inputs():
    x = torch.randn(batch, seq, d_model)
    return [x]


def get_init_inputs():
    return [d_model, n_heads, d_ff]
