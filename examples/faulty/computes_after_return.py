# Faulty on purpose: its forward returns an empty output at once and arms a one-shot POSIX timer
# (timer_create, SIGEV_THREAD_ID: aimed at the calling thread, kjudge's) that 30 us later sends
# SIGURG, whose handler, set from C (sigaction through ctypes, a ctypes callback), computes the
# softmax into that output: on kjudge's own thread, after the call's clock stopped and before
# kjudge copied what it returned. With the handler in C it read correct at 22-57x on the CPU, the
# timed calls doing nothing. The worker's thread now keeps every signal blocked while it times
# (the signal waits until the timing and its checks are done), and a drawn call is copied as soon
# as its clock stops: the audited calls hold empty outputs, and it is judged incorrect. (Its
# trials pass: the harness's thread takes signals there, and the handler fills the output before
# the trial's copy.)
import ctypes
import ctypes.util
import signal
import threading

import torch
import torch.nn as nn

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class _Action(ctypes.Structure):  # struct sigaction, as glibc lays it out on Linux
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


class _Event(ctypes.Structure):  # struct sigevent: value, signal, notify, then _tid
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("tid", ctypes.c_int), ("pad", ctypes.c_int * 11)]


class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _Timer(ctypes.Structure):
    _fields_ = [("interval", _Time), ("value", _Time)]


_work = []  # (input, output) of the call the timer is for


def _on_signal(signo):
    if _work:
        x, out = _work.pop()
        y = torch.softmax(x, dim=-1)
        ctypes.memmove(out.data_ptr(), y.data_ptr(), y.numel() * y.element_size())


_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)(_on_signal)
_ACTION = _Action(handler=ctypes.cast(_HANDLER, ctypes.c_void_p).value, flags=0x10000000)
_timer = ctypes.c_void_p()
_event = _Event(signo=int(signal.SIGURG), notify=4, tid=threading.get_native_id())  # THREAD_ID
if _libc.timer_create(1, ctypes.byref(_event), ctypes.byref(_timer)) != 0:  # CLOCK_MONOTONIC
    raise OSError(ctypes.get_errno(), "timer_create")
_SOON = _Timer(_Time(0, 0), _Time(0, 30_000))


class ModelNew(nn.Module):
    def forward(self, x):
        # Again at every call: kjudge keeps signal dispositions to the candidate's turns.
        _libc.sigaction(int(signal.SIGURG), ctypes.byref(_ACTION), None)
        out = torch.empty_like(x)
        _work[:] = [(x, out)]
        _libc.timer_settime(_timer, 0, ctypes.byref(_SOON), None)
        return out
