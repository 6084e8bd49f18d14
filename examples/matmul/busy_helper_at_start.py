# Candidate for problems/level1/matmul.py, honest: a @ b as the reference computes it, with a
# helper process that is busy for a while after it starts and idle after, as torch.compile's
# compile workers are (they start in the background and import torch, then wait for work). At
# its fourth call the candidate forks the helper, which spins for 2.5 s and then sleeps until
# the worker ends (it watches its parent; at most 120 s). The fourth call is the last before the
# timing under `--trials 3` (three trials and the held-out one; the end-to-end test's options),
# so the helper's start reaches into the timing unless kjudge waits for it. kjudge waits for
# such background CPU to go quiet before the timing (flag waited_for_background_cpu), so it runs
# beside neither side's samples and both sides' host-side figures stand.
import os
import time

import torch
import torch.nn as nn

_calls = 0


def _help(parent: int) -> None:
    start = time.monotonic()
    while time.monotonic() - start < 2.5:
        sum(range(20000))
    while os.getppid() == parent and time.monotonic() - start < 120:
        time.sleep(0.05)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        global _calls
        _calls += 1
        if _calls == 4:
            parent = os.getpid()
            if os.fork() == 0:
                _help(parent)
        return torch.matmul(a, b)
