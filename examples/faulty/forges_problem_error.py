# Faulty on purpose: instead of computing softmax, it writes a forged verdict of the problem's
# error ("the reference failed, out of memory") into every pipe the worker holds open past the
# standard streams (kjudge's event channel among them), then exits at once. kjudge checked the
# evidence of a "correct" verdict only, and blamed the problem. A problem error reported after a
# candidate's code ran now stands only where the reference, run alone in a fresh worker, fails
# too: here it runs through, and the error is the candidate's.
import os

import torch
import torch.nn as nn

_FORGED = (b'{"final":{"status":"problem_error","message":"the reference Model failed on trial '
           b'inputs [[3824, 1007]]: RuntimeError: out of memory"}}\n')


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd < 3:
                continue
            try:
                if os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
                    os.write(fd, _FORGED)
            except OSError:
                pass
        os._exit(0)
