# Changes torch's global settings at import (default dtype float64, TF32 matmuls, cuDNN
# benchmark) and computes a correct softmax under them. kjudge must report the changes
# (candidate_changed_torch_state), keep them in force for the candidate's own calls (its forward
# checks that they are) and run the reference without them: the result is correct, with
# float32 outputs on both sides.
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.get_default_dtype() != torch.float64 or not torch.backends.cudnn.benchmark:
            raise RuntimeError("the settings this candidate made at import are not in force")
        return torch.softmax(x.to(torch.get_default_dtype()), dim=-1).to(x.dtype)
