# Faulty on purpose: installs libc's usleep as the C handler of SIGRTMAX (sigaction through
# ctypes: Python's own table of handlers still reads the default) and a POSIX timer
# (timer_create: signal.getitimer does not see it) that sends it every 150 us, armed from the end
# of each of its forwards to the start of the next. Each signal slept inside the reference's calls
# and none inside its own: an exact copy of the reference read 2.3x on the CPU, unflagged. kjudge
# keeps the signals' dispositions, those set from C too, to the candidate's calls: in the
# reference's turn SIGRTMAX's is the default again, which ends the process, and the evaluation
# ends as this candidate's crash.
import ctypes
import ctypes.util
import signal

import torch
import torch.nn as nn

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class _Action(ctypes.Structure):  # struct sigaction, as glibc lays it out on Linux
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


class _Event(ctypes.Structure):  # struct sigevent: value, signal, notify, padding
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_int * 12)]


class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _Timer(ctypes.Structure):
    _fields_ = [("interval", _Time), ("value", _Time)]


_action = _Action(handler=ctypes.cast(_libc.usleep, ctypes.c_void_p).value, flags=0x10000000)
if _libc.sigaction(int(signal.SIGRTMAX), ctypes.byref(_action), None) != 0:
    raise OSError(ctypes.get_errno(), "sigaction")
_timer = ctypes.c_void_p()
_event = _Event(signo=int(signal.SIGRTMAX), notify=0)  # SIGEV_SIGNAL
if _libc.timer_create(1, ctypes.byref(_event), ctypes.byref(_timer)) != 0:  # CLOCK_MONOTONIC
    raise OSError(ctypes.get_errno(), "timer_create")
_ON, _OFF = _Timer(_Time(0, 150_000), _Time(0, 150_000)), _Timer()


class ModelNew(nn.Module):
    def forward(self, a, b):
        _libc.timer_settime(_timer, 0, ctypes.byref(_OFF), None)
        out = torch.matmul(a, b)
        _libc.timer_settime(_timer, 0, ctypes.byref(_ON), None)
        return out
