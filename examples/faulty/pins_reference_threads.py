# Faulty on purpose: a correct softmax that pins every thread of the worker to one CPU in each of
# its calls and runs its own calls on one torch thread (torch's thread count is kept to its
# calls), so the reference's intra-op threads then share that CPU. The CPU affinity of the
# worker's threads is the process's, outside torch's settings: this read correct at 4.3x on the
# CPU (an honest reading is about 0.5x). kjudge reads the threads' affinity at every switch of
# sides and puts the reference's back (flag candidate_changed_torch_state).
import os

import torch
import torch.nn as nn


def _pin_all(cpus):
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, x):
        torch.set_num_threads(1)
        _pin_all({min(os.sched_getaffinity(0))})
        return torch.softmax(x, dim=-1)
