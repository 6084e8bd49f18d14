# Faulty on purpose: loads_cpu_in_a_child_process.py with the busy loop one process further down:
# its first call forks a child that forks the spinning grandchild and exits at once. The orphan
# went to the nearest child subreaper above it, kjudge's guard or worker pool, out of the
# worker's /proc children lists where kjudge books the CPU of the processes it started: correct
# at 1.9x host wall on the CPU, unflagged. The worker is a child subreaper itself now, so the
# grandchild comes to it and is booked: python_threads_busy. The grandchild ends when the worker
# does, or after 120 s.
import mmap
import os
import time

import torch
import torch.nn as nn

_page = mmap.mmap(-1, mmap.PAGESIZE)  # shared with the grandchild across both forks
_started = False


def _spin(worker: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except OSError:
            break
        if _page[0] == 1:
            sum(range(20000))
        else:
            time.sleep(0.0002)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        global _started
        if not _started:
            _started = True
            worker = os.getpid()
            child = os.fork()
            if child == 0:
                if os.fork() == 0:
                    _spin(worker)
                os._exit(0)
            os.waitpid(child, 0)
        _page[0] = 0
        try:
            return torch.matmul(a, b)
        finally:
            _page[0] = 1
