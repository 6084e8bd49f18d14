# Faulty on purpose: a matmul whose timed calls do no work. Each output carries a weakref
# finalizer; when kjudge frees the output in the untimed preparation of the candidate's next
# sample, the finalizer looks at the input sets it has been called with, finds the one whose
# values changed (kjudge had just rewritten it), and computes its product there. The next
# forward finds that product waiting and returns it. kjudge freed the last output after the
# rewrite, and this read correct at 233x on the CPU; it now frees it before the rewrite, where
# the finalizer can only compute the product of inputs about to change, and the forward does the
# work itself: about 1x.
import weakref

import torch
import torch.nn as nn

_watched = {}  # (a's data pointer, b's) -> (a, b, probe of their values when last called)
_ready = {}    # the same key -> (probe of the values it was computed for, the product)


def _probe(a, b):
    return (a[0, 0].item(), a[-1, -1].item(), b[0, 0].item(), b[-1, -1].item())


def _compute_changed():
    with torch.no_grad():
        for key, (a, b, probe) in list(_watched.items()):
            now = _probe(a, b)
            if now != probe and _ready.get(key, (None,))[0] != now:
                _ready[key] = (now, torch.matmul(a, b))


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr())
        probe = _probe(a, b)
        hit = _ready.pop(key, None)
        out = hit[1] if hit is not None and hit[0] == probe else torch.matmul(a, b)
        if len(_watched) > 64 and key not in _watched:
            _watched.pop(next(iter(_watched)))
        _watched[key] = (a, b, probe)
        weakref.finalize(out, _compute_changed)
        return out
