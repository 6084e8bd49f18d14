# Faulty on purpose: the reference's matmul, with a perf event (a software task-clock counter that
# samples every 25 us of a thread's CPU time, perf_event_open through ctypes) opened at import on
# each of the worker's threads, enabled from the end of each of its forwards to the start of the
# next: every sample is an interrupt on that thread, inside the reference's calls only (1.9-2.0x
# on the CPU, unflagged). kjudge counts the process's perf events after the candidate's code, on
# the CPU: new ones are the candidate's error. Where the system refuses perf events
# (kernel.perf_event_paranoid 3) or on another architecture, this is a plain matmul.
import ctypes
import os
import platform
import struct

import torch
import torch.nn as nn

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_ENABLE, _DISABLE = 0x2400, 0x2401  # PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE


def _open_events():
    if platform.machine() != "x86_64":
        return []
    events = []
    for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
        attr = (ctypes.c_uint8 * 128)()
        # PERF_TYPE_SOFTWARE, its size, PERF_COUNT_SW_TASK_CLOCK, a period of 25 us, samples of
        # the instruction pointer; disabled at first, user space only.
        struct.pack_into("<IIQQQQQ", attr, 0, 1, 128, 1, 25_000, 1, 0, 1 | 1 << 5 | 1 << 6)
        fd = _libc.syscall(298, ctypes.byref(attr), tid, -1, -1, 0)  # perf_event_open
        if fd >= 0:
            events.append(fd)
    return events


_events = _open_events()


def _switch(request):
    for fd in _events:
        _libc.ioctl(fd, ctypes.c_ulong(request), ctypes.c_ulong(0))


class ModelNew(nn.Module):
    def forward(self, a, b):
        _switch(_DISABLE)
        out = torch.matmul(a, b)
        _switch(_ENABLE)
        return out
