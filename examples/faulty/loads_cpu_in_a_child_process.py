# Faulty on purpose: loads_cpu_between_calls.py with the busy loop in a forked child process
# instead of a thread. It computes a @ b as the reference does; from its first call on the child
# spins whenever a byte in a page it shares with the worker says the forward is not running, so
# the reference's samples run next to it and its own do not. kjudge booked the CPU of the
# worker's Python threads only: on the CPU this read correct at 1.75x host wall, unflagged. It
# now reads the CPU of the processes the worker's threads started as well, and flags
# python_threads_busy. The child ends when the worker does (it watches its parent), or after
# 120 s.
import mmap
import os
import time

import torch
import torch.nn as nn

_page = mmap.mmap(-1, mmap.PAGESIZE)  # shared with the child across fork()
_child = None


def _spin(parent: int) -> None:
    deadline = time.monotonic() + 120
    while os.getppid() == parent and time.monotonic() < deadline:
        if _page[0] == 1:
            sum(range(20000))
        else:
            time.sleep(0.0002)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        global _child
        if _child is None:
            parent = os.getpid()
            _child = os.fork()
            if _child == 0:
                _spin(parent)
        _page[0] = 0
        try:
            return torch.matmul(a, b)
        finally:
            _page[0] = 1
