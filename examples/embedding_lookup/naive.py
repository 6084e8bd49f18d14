"""Candidate for problems/level1/embedding_lookup.py: index_select on a table named `table` (the
reference's is `embedding.weight`), so the weight arrives by order and shape. Indices stay int64."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(vocab, dim))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        flat = torch.index_select(self.table, 0, idx.reshape(-1))
        return flat.view(*idx.shape, self.table.shape[1])
