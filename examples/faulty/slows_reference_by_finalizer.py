# Faulty on purpose: computes a correct softmax, and hangs a weakref finalizer on the reference's
# last output, which kjudge's timing runner keeps until that side's next call. The finalizer
# sleeps 3 ms and then hangs itself on the output that replaced the one freed, so each time the
# reference's output is freed the sleep runs. kjudge frees a side's last output in the untimed
# preparation of its next sample (it used to be freed inside the next timed call, where this read
# correct at 4.1x on the CPU): the sleeps must stay out of the reference's figures, and the
# speedup must read as the same function's, about 1x.
import sys
import time
import weakref

import torch
import torch.nn as nn

_hung = set()


def _hang(holder):
    out = holder[0]
    if isinstance(out, torch.Tensor) and id(out) not in _hung:
        _hung.add(id(out))
        weakref.finalize(out, _on_free, holder, id(out))


def _on_free(holder, key):
    _hung.discard(key)
    time.sleep(0.003)
    _hang(holder)


class ModelNew(nn.Module):
    def forward(self, x):
        harness = sys.modules.get("kjudge_harness")
        outputs = getattr(harness, "_run_outputs", None)
        holder = outputs.get("reference") if isinstance(outputs, dict) else None
        if holder is not None:
            _hang(holder)
        return torch.softmax(x, dim=-1)
