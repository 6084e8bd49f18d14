# Faulty on purpose: computes a correct softmax into a buffer it keeps, and at import sets glibc's
# malloc tunables through ctypes (a 64 KiB mmap threshold, no trimming threshold), so every large
# allocation becomes a fresh mapping whose pages fault in when first written: the reference's
# softmax allocates its output at every call, this candidate does not. The tunables are the
# process's, outside torch's settings, and read correct at 4.8x on the CPU. kjudge sets its own
# values again at every switch of sides: the speedup must read about 1x.
import ctypes

import torch
import torch.nn as nn

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_libc = ctypes.CDLL(None)
if hasattr(_libc, "mallopt"):
    _libc.mallopt(_M_MMAP_THRESHOLD, 64 * 1024)
    _libc.mallopt(_M_TRIM_THRESHOLD, 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = {}

    def forward(self, x):
        out = self.kept.get(x.shape)
        if out is None:
            out = self.kept[x.shape] = torch.empty_like(x)
        return torch.ops.aten._softmax.out(x, -1, False, out=out)
