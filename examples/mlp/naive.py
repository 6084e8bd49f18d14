"""Candidate for problems/level3/mlp.py: the same three layers as explicit attributes `fc0..fc2`
(not an nn.Sequential), so parameter names differ from the reference's `layers.N.*` and the judge
pairs them by the ends of their names (`weight`, `bias`) where their shapes tell the layers apart,
else by order and shape. The layers start at zero, so without that copy the output is all zeros.
Uses addmm with the ReLU applied in place."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_sizes: list, output_size: int):
        super().__init__()
        sizes = [input_size, *hidden_sizes, output_size]
        self.n_layers = len(sizes) - 1
        for i in range(self.n_layers):
            layer = nn.Linear(sizes[i], sizes[i + 1])
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
            setattr(self, f"fc{i}", layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.n_layers):
            layer = getattr(self, f"fc{i}")
            x = torch.addmm(layer.bias, x, layer.weight.t())
            if i + 1 < self.n_layers:
                x = x.relu_()
        return x
