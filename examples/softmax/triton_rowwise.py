"""Candidate for problems/level1/softmax.py: one Triton program per row, the whole row held in
registers (BLOCK = next power of two >= cols; masked lanes load -inf). Needs a CUDA GPU: on CPU the
module imports but forward raises. (Not named triton.py: a judge that puts the candidate's folder on
sys.path would make such a file shadow the triton package, and `import triton` would import itself.)"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_row_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            raise RuntimeError("the Triton softmax candidate needs a CUDA tensor")
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        rows, cols = x2.shape
        out = torch.empty_like(x2)
        block = triton.next_power_of_2(cols)
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        _softmax_row_kernel[(rows,)](out, x2, x2.stride(0), out.stride(0), cols,
                                     BLOCK=block, num_warps=num_warps)
        return out.view(x.shape)
