# Faulty on purpose: memoises its result per input buffer and per "pattern" of the input (the signs
# of its first 32 elements, which survive rescaling by a positive factor). Fresh random inputs (every correctness trial) always
# miss the cache, so the trials pass; during timing the same buffers come back rescaled, the cache
# hits and the forward costs nothing. kjudge's post-timing check on fresh inputs must catch it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1)
        key = (x.data_ptr(), tuple(x.shape), tuple((flat[:32] > 0).tolist()))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        out = torch.softmax(x, dim=-1)
        self._cache[key] = out
        return out
