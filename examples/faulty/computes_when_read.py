# Faulty on purpose: its forward returns at once a list subclass holding an empty output, and does
# the matmul only when the list's length is first asked for, which kjudge does when it reads the
# outputs, outside every timed region. The trials and the post-timing check read every output it
# returns, and so compute it; the timed calls do no work. kjudge's audits of the calls in the
# timing loop read a list subclass through list's own C methods, which run nothing of its: this
# one's kept calls hold the empty output, and it is judged incorrect (it read 397x host wall,
# audits passed, while the audits asked the list its length).
import torch
import torch.nn as nn


class _FilledWhenRead(list):
    def __init__(self, fill, out):
        super().__init__([out])
        self._fill = fill

    def __len__(self):
        if self._fill is not None:
            self._fill()
            self._fill = None
        return list.__len__(self)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        return _FilledWhenRead(lambda: torch.matmul(a, b, out=out), out)
