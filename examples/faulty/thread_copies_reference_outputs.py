# Faulty on purpose: a softmax at the nominal (timed) shape only, zeros at every other. A thread
# it starts at import waits, after each call that returned zeros, for the reference's outputs of
# the trial to appear in kjudge's harness (its trial state, `_trial["ref_out"]`) next to the host
# copy of the candidate's own (`_trial["cand_host"]`), and copies the first over the second before
# the comparison. While the harness kept a trial's host copies until the comparison, this read
# correct, held-out and stress trials included; kjudge now copies each side's outputs into C++ as
# its forward returns (the candidate's before the reference runs), where the comparison reads
# them, and this reads incorrect. (docs/methodology.md, the seal.)
import sys
import threading
import time

import torch
import torch.nn as nn

_armed = threading.Event()


def _copier():
    while True:
        _armed.wait()
        harness = sys.modules.get("kjudge_harness")
        state = getattr(harness, "_trial", {}) if harness is not None else {}
        ref, own = state.get("ref_out"), state.get("cand_host")
        if ref is None or own is None:
            time.sleep(0)
            continue
        try:
            for o, r in zip(own, ref):
                o.copy_(r)
        except Exception:
            pass
        _armed.clear()


threading.Thread(target=_copier, daemon=True).start()
sys.setswitchinterval(1e-5)


class ModelNew(nn.Module):
    def forward(self, x):
        if tuple(x.shape) == (4096, 1024):
            return torch.softmax(x, dim=-1)
        _armed.set()
        return torch.zeros_like(x)
