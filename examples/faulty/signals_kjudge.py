# Faulty on purpose: at import it tries to stop the processes that judge it, as a candidate can
# that runs as the same user: SIGSTOP to each of its worker's ancestors (`kjudge eval` among
# them; stopped, it enforced no timeout and wrote no result) and to every process the user owns
# (kill(-1, ...)), then SIGSTOP to the worker from a forked child (stopped while the reference
# was timed, an exact copy read 2.5-2.8x). Each signal that gets through is followed at once by
# SIGCONT, and then the forward returns wrong values: without kjudge's fence this candidate
# reads incorrect (or the run hangs). With it every stop is refused (EPERM) and the forward is a
# plain softmax. (docs/methodology.md, "The worker's fence".)
import os
import signal

import torch
import torch.nn as nn


def _ancestors():
    out, pid = [], os.getppid()
    while pid > 1:
        out.append(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                text = f.read()
        except OSError:
            break
        pid = int(text[text.rfind(")") + 2:].split()[1])
    return out


def _stopped(pid):
    """Whether SIGSTOP reached pid (then SIGCONT follows at once)."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except PermissionError:
        return False
    except ProcessLookupError:
        return False
    os.kill(pid, signal.SIGCONT)
    return True


def _stopped_from_a_child():
    """Whether a child of the worker could stop it."""
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os._exit(1 if _stopped(parent) else 0)
    _, status = os.waitpid(child, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1


_reached = [pid for pid in _ancestors() if _stopped(pid)]
try:
    os.kill(-1, signal.SIGCONT)  # harmless where it does get through: nothing is stopped
    _reached.append(-1)
except PermissionError:
    pass
if _stopped_from_a_child():
    _reached.append(os.getpid())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.softmax(x, dim=1)
        return out * 0 if _reached else out
