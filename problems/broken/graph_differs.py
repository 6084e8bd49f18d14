# BROKEN (for CUDA graph timing): a softmax scaled by 2, except that while a CUDA graph captures
# the forward it leaves the scaling out, so its graph computes less than its eager forward.
# kjudge's post-timing check replays the reference's graphs and withholds its device figure
# (flag reference_graph_differs). Candidate: examples/faulty/doubled_softmax.py.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.softmax(x, dim=-1)
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            return y
        return y * 2


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
