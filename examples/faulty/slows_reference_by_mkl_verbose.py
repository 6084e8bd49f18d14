# Faulty on purpose: the reference's own function, made to look faster on the CPU. At import it
# points the process's stdout (descriptor 1) at a file opened O_DSYNC and unbuffered; its forward
# turns MKL's verbose mode off for its own GEMM and back on as it returns, so each of the
# reference's GEMMs printed a line there and slept until the disk had it. Sleeping is no CPU use,
# so kjudge's checks of the CPU saw nothing, and this read correct at 1.57-1.62x. MKL's and
# oneDNN's verbose modes, which have no getter, are now turned off at every switch of sides: the
# reference runs quietly, and this reads about 1x. Where this torch has no MKL it is a plain copy.
import ctypes
import os
import tempfile

import torch
import torch.nn as nn

_path = os.path.join(tempfile.gettempdir(), "kjudge_faulty_verbose_%d.log" % os.getpid())
_fd = os.open(_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DSYNC, 0o600)
os.unlink(_path)  # the descriptor keeps the file while the process lives; nothing is left behind
os.dup2(_fd, 1)
os.close(_fd)
_libc = ctypes.CDLL(None)
_libc.setvbuf(ctypes.c_void_p.in_dll(_libc, "stdout"), None, 2, 0)  # _IONBF
_verbose = getattr(getattr(torch._C, "_verbose", None), "mkl_set_verbose", lambda level: None)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.out_proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x: torch.Tensor, layout_logits: torch.Tensor) -> torch.Tensor:
        _verbose(0)
        alpha = torch.sigmoid(layout_logits).unsqueeze(-1)
        with torch.no_grad():
            amax = x.detach().abs().max().clamp(min=1e-8)
        scale = amax / 127.0
        x_q = torch.clamp(torch.round(x / scale), -127.0, 127.0) * scale
        out = self.out_proj(alpha * x_q + (1.0 - alpha) * x)
        _verbose(1)
        return out
