# Faulty on purpose: computes what problems/level2/gemm_bias_relu_scale.py does, and in its
# constructor finds the reference model (built first) and sets its Linear weight's .data to the
# same values in a view with strides (16 k + 1, 16) into a larger buffer. The Parameter is the
# same object, of the same class, with the same values, but every GEMM of the reference's copies
# it to contiguous memory first: 1.6x on the CPU, unflagged. kjudge's watch of the reference model
# now reads each tensor's place in memory (strides, data pointer): a runtime error.
import gc

import torch
import torch.nn as nn
import torch.nn.functional as F


def _scatter(weight: nn.Parameter) -> None:
    rows, cols = weight.shape
    stride = (cols * 16 + 1, 16)
    room = (rows - 1) * stride[0] + (cols - 1) * stride[1] + 1
    spread = torch.zeros(room, dtype=weight.dtype).as_strided((rows, cols), stride)
    spread.copy_(weight.detach())
    weight.data = spread


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        for o in gc.get_objects():
            if type(o).__name__ == "Model" and isinstance(getattr(o, "linear", None), nn.Linear):
                _scatter(o.linear.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(F.linear(x, self.linear.weight, self.linear.bias)) * self.scale
