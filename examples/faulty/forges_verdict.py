# Faulty on purpose: instead of computing softmax, it writes a forged "correct" verdict into every
# pipe the worker process holds open (kjudge's event channel among them), then exits at once.
# kjudge must not believe it: a verdict without its trials is no verdict.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        forged = b'{"final":{"status":"correct","message":"forged"}}\n'
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                if os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
                    os.write(fd, forged)
            except OSError:
                pass
        os._exit(0)
