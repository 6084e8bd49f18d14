# Faulty on purpose: the reference's softmax, with torch's profiler started at the end of each
# forward and stopped at the start of the next, so that it records every op of the reference's
# calls in between (record functions around each, shapes kept) and none of its own. kjudge
# checks at every switch to the reference that neither torch's profiler nor the JIT's tracer is
# on: the candidate's runtime error.
import torch
import torch.nn as nn

_running = []


class ModelNew(nn.Module):
    def forward(self, x):
        while _running:
            _running.pop().__exit__(None, None, None)
        out = torch.softmax(x, dim=-1)
        profiler = torch.autograd.profiler.profile(record_shapes=True)
        profiler.__enter__()
        _running.append(profiler)
        return out
