# Faulty on purpose, made harmless by kjudge: adds an audit hook (PEP 578), which nothing can
# remove and which would see every audited operation in the worker, kjudge's own among them (its
# reads of sys.monitoring before each turn of the reference raise audit events: a hook could put
# a monitoring callback back right after such a read). kjudge's worker refuses audit hooks, which
# Python does silently, so this softmax must come out correct: had its hook been added, it would
# return its output doubled.
import sys

import torch
import torch.nn as nn

_seen = []


def _hook(event, args):
    if event == "kjudge_example.probe":
        _seen.append(event)


sys.addaudithook(_hook)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys.audit("kjudge_example.probe")
        out = torch.softmax(x, dim=-1)
        return out * 2.0 if _seen else out
