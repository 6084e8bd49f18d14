"""Level 1: embedding lookup with int64 token indices.

Exercises: an integer input that must stay int64 (casting it to float would lose indices above 2^24
and is not what the reference receives); a weight gathered, not multiplied. The table is tied to the
weights and does not jitter; batch and sequence length do.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = embedding.weight[idx] for idx of shape (batch, seq), dtype int64."""

    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.embedding(idx)


vocab = 32000
dim = 256
batch = 32
seq = 512


def get_inputs():
    p = popcorn_pri  # noqa: F821 -- injected by the judge
    idx = torch.randint(0, vocab, (p.jitter_int(batch), p.jitter_int(seq)), dtype=torch.int64)
    return [idx]


def get_init_inputs():
    return [vocab, dim]
