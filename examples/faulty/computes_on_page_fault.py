# Faulty on purpose: its forward returns at once an output in memory it mapped unreadable
# (mmap PROT_NONE), and a SIGSEGV handler of its own, set from C (sigaction through ctypes, a
# ctypes callback: Python's own table of handlers still reads the default), computes the softmax
# into it when something first reads it: the timed calls only copy their input, and every copy
# kjudge made of their outputs (the trials, the audits of the timing loop, the check after it)
# ran the handler, outside every timed region: correct on the CPU (this one 0.17x, its calls'
# mappings being slow; with the handler in C, or a userfaultfd, 34-78x, only 40 of 182 forwards
# computing anything). kjudge now reads a forward's CPU outputs first with every signal blocked
# on the reading thread: the fault ends the worker there, and the evaluation ends as this
# candidate's crash. (The worker's fence refuses userfaultfd.)
import ctypes
import ctypes.util
import signal
import time

import torch
import torch.nn as nn

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.mremap.restype = ctypes.c_void_p
_libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                         ctypes.c_void_p]
_PROT_NONE, _PROT_RW, _MAP_PRIVATE_ANONYMOUS, _MREMAP_MAYMOVE_FIXED = 0, 3, 0x22, 3
_PAGE = 4096


class _Action(ctypes.Structure):  # struct sigaction, as glibc lays it out on Linux
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


_pending = []  # [address, bytes, the input, 0 unread / 1 being filled / 2 filled]


def _on_fault(signo, info, context):
    address = ctypes.c_void_p.from_address(info + 16).value or 0  # siginfo_t's si_addr
    for job in _pending:
        start, length, x, state = job
        if not start <= address < start + length:
            continue
        if state == 0:  # the first fault fills it; a fault on another thread waits for that
            job[3] = 1
            y = torch.softmax(x, dim=-1)
            filled = _libc.mmap(None, length, _PROT_RW, _MAP_PRIVATE_ANONYMOUS, -1, 0)
            ctypes.memmove(filled, y.data_ptr(), y.numel() * y.element_size())
            _libc.mremap(filled, length, length, _MREMAP_MAYMOVE_FIXED, start)  # in one step
            job[3] = 2
        while job[3] != 2:
            time.sleep(1e-4)
        return
    _libc.sigaction(int(signal.SIGSEGV), ctypes.byref(_Action()), None)  # not ours: the default


_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(_on_fault)
_ACTION = _Action(handler=ctypes.cast(_HANDLER, ctypes.c_void_p).value,
                  flags=0x4 | 0x40000000)  # SA_SIGINFO | SA_NODEFER


class ModelNew(nn.Module):
    def forward(self, x):
        # Again at every call: kjudge keeps signal dispositions to the candidate's turns.
        _libc.sigaction(int(signal.SIGSEGV), ctypes.byref(_ACTION), None)
        bytes_ = x.numel() * x.element_size()
        length = (bytes_ + _PAGE - 1) // _PAGE * _PAGE
        start = _libc.mmap(None, length, _PROT_NONE, _MAP_PRIVATE_ANONYMOUS, -1, 0)
        _pending.append([start, length, x.clone(), 0])
        storage = (ctypes.c_float * x.numel()).from_address(start)
        return torch.frombuffer(storage, dtype=torch.float32).view(x.shape)
