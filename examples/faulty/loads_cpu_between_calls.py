# Faulty on purpose: computes a @ b as the reference does, and from its first call on keeps a
# thread of its own busy hashing (hashlib lets go of the GIL, so it takes a core) whenever its
# forward is not running: the reference's samples run next to it, its own do not. On the CPU
# this read 1.84x host wall for the same matmul. kjudge measures the CPU time of the Python
# threads besides the worker's own over the timing loop, withholds the host-side figures, and
# flags python_threads_busy.
import hashlib
import threading

import torch
import torch.nn as nn

_burn = threading.Event()
_paused = threading.Event()
_block = b"x" * (64 << 10)
_thread = None


def _loop() -> None:
    while True:
        if not _burn.is_set():
            _paused.set()
            _burn.wait()
            _paused.clear()
        hashlib.sha256(_block).digest()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        global _thread
        if _thread is None:
            _thread = threading.Thread(target=_loop, daemon=True)
            _thread.start()
        _burn.clear()
        _paused.wait(0.01)
        try:
            return torch.matmul(a, b)
        finally:
            _burn.set()
