# An honest candidate that does its host work in threads of its own: a @ b as two blocks of rows,
# each multiplied in a thread of a pool the model keeps (torch lets go of the GIL in matmul, so
# the blocks run side by side on the CPU). The pool's threads work during the candidate's own
# forwards only; kjudge books Python threads' CPU to the side whose turn it is, and this does not
# raise python_threads_busy.
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="row_blocks")

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        half = a.shape[0] // 2
        blocks = [a[:half], a[half:]]
        return torch.cat(list(self.pool.map(lambda rows: torch.matmul(rows, b), blocks)))
