# Faulty on purpose: registers a Python kernel for aten::mm on the CPU (OpOverload.py_impl, a
# table torch consults only while its Python dispatcher is on) that returns a cheap wrong value,
# and keeps a guard of the Python dispatcher alive between its calls: off during its own forward,
# on from its end until its next one. Every matmul the reference ran in between went through the
# wrong kernel and agreed with this candidate's wrong output: it read correct, every trial's error
# 0. kjudge reads torch's dispatcher state of the thread at every switch to the reference (the
# Python dispatcher's key included) and ends the evaluation as the candidate's runtime error.
import torch
import torch.nn as nn

_guards = []


def _cheap(a, b):
    return a[:, :1] * 3.0 + b[:1, :]  # O(M N), not a product


if hasattr(torch._C, "_EnablePythonDispatcher"):
    torch.ops.aten.mm.default.py_impl(torch._C.DispatchKey.CPU)(_cheap)


class ModelNew(nn.Module):
    def forward(self, a, b):
        _guards.clear()
        out = _cheap(a, b)
        if hasattr(torch._C, "_EnablePythonDispatcher"):
            _guards.append(torch._C._EnablePythonDispatcher())
        return out
