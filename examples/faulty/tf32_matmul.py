# Faulty on purpose: turns on TF32 for cuBLAS matmuls at import and multiplies with
# torch.matmul, whose fp32 result then carries TF32's ~1e-3 relative error. A reference sharing
# its interpreter would run in TF32 too and agree with it exactly. kjudge keeps the setting to the
# candidate's own calls, so the reference computes in fp32: it must come out incorrect (fp32
# tolerance 1e-4), with the change flagged.
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
