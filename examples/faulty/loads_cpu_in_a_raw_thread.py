# Faulty on purpose: computes softmax(x) as the reference does, and at import starts two threads
# with _thread.start_new_thread (outside threading's registry) that hash (hashlib lets go of the
# GIL, so each takes a core) whenever the candidate's forward is not running: the reference's
# samples run next to them, its own do not. On the 2-core CPU machine this read 4.0x host wall for
# the same softmax, with only cpu_wait_samples warnings. On the CPU kjudge now counts every
# thread the worker started since the candidate's code first ran, withholds the host-side
# figures, and flags python_threads_busy.
import _thread
import hashlib

import torch
import torch.nn as nn

_gate = _thread.allocate_lock()
_block = b"\0" * (64 << 10)


def _burn() -> None:
    h = hashlib.sha256()
    while True:
        _gate.acquire()  # held by the forward while it runs: parked then, without the GIL
        _gate.release()
        h.update(_block)


for _ in range(2):
    _thread.start_new_thread(_burn, ())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _gate:
            return torch.softmax(x, dim=-1)
