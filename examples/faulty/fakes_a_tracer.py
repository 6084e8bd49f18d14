# Faulty on purpose: a doubled softmax that passed. nn.Module's call asks
# torch._C._get_tracing_state() whether a TorchScript trace runs; rebinding it (and
# torch._C._is_tracing) sent every module call, the reference's too, through the tracer's path,
# which calls the tracing state's pop_scope() right after the module's forward. Its pop_scope()
# doubled the result in its caller's frame, so the reference's softmax doubled as this one's:
# correct. torch._C is watched now: the reference runs with torch's own functions, and this
# output is judged incorrect.
import sys

import torch
import torch.jit._trace as _trace
import torch.nn as nn

_own = set()


class _Tracing:
    def push_scope(self, name):
        pass

    def pop_scope(self):
        result = sys._getframe(1).f_locals.get("result")
        if isinstance(result, torch.Tensor):
            result.mul_(2)


class _Scopes(dict):
    def get(self, key, default=None):
        return None if id(key) in _own else "scope"


_state = _Tracing()
torch._C._is_tracing = lambda: True
torch._C._get_tracing_state = lambda: _state
_trace._trace_module_map = _Scopes()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _own.add(id(self))

    def forward(self, x):
        return torch.softmax(x, dim=-1) * 2
