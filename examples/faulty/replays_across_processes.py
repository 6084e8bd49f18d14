# Faulty on purpose, for problems/level1/mse_loss.py with --processes: the first process of an
# evaluation computes the loss and keeps each answer in a folder named after the evaluation (the
# `kjudge eval` process, found by walking up /proc), keyed by a fingerprint of the inputs; a later
# process of the same run answers from that folder where it can, and computes only what it has
# not seen. When every process timed the same input values in the same order (one timing key for
# all of them), every timed call of a later process was answered from the folder: correct, and
# fast where computing is slow (8.6x for a reviewer's version, against 1.0x honestly). Each
# process now times values of its own, and only the trials, whose inputs follow from --seed,
# repeat. Each process writes how many calls it answered from the earlier processes' answers
# to `stats-<pid>` there (calls, then answered), for tests/e2e.
import hashlib
import os
import pathlib
import tempfile

import torch
import torch.nn as nn


def _evaluation_pid():
    found, pid = 0, os.getppid()
    for _ in range(16):
        try:
            argv = pathlib.Path("/proc/%d/cmdline" % pid).read_bytes().split(b"\0")
            if len(argv) > 1 and argv[0].endswith(b"kjudge") and argv[1] == b"eval":
                found = pid  # the topmost: kjudge eval itself (its guard has its command line)
            pid = int(pathlib.Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


_DIR = pathlib.Path(tempfile.gettempdir()) / ("kjudge_replays_%d" % _evaluation_pid())
_DIR.mkdir(exist_ok=True)
_EARLIER = {f.name for f in _DIR.iterdir()}  # answers kept by earlier processes of this run


def _fingerprint(pred, target):
    h = hashlib.sha256()
    for t in (pred, target):
        h.update(repr(tuple(t.shape)).encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


_STATS = _DIR / ("stats-%d" % os.getpid())
_counts = [0, 0]  # calls, answered from the folder


class ModelNew(nn.Module):
    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        kept = _DIR / _fingerprint(pred, target)
        _counts[0] += 1
        if kept.name in _EARLIER:
            _counts[1] += 1
            loss = torch.tensor(float(kept.read_text()), dtype=pred.dtype, device=pred.device)
        else:
            loss = torch.mean((pred - target) ** 2)
            kept.write_text(repr(loss.item()))
        _STATS.write_text("%d %d\n" % tuple(_counts))
        return loss
