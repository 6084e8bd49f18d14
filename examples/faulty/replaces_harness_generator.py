# Faulty on purpose: returns zeros for problems/level1/matmul.py, after putting a wrapper that
# zeroes torch's CPU generator after every seeding (zeroes_the_generator_after_seeding.py's) in
# place of the first item of kjudge's own list of the generators it seeds, reached through
# sys.modules. The seal held the harness's names, not what its lists hold: every input would be
# drawn as zeros. The list's items are sealed once kjudge's setup has filled it: a compile error
# (the change is found right after the import).
import sys

import torch
import torch.nn as nn

_harness = sys.modules["kjudge_harness"]
_real = _harness._generators[0]
_MT_WORDS = slice(24, 24 + 624 * 8)


class _Zeroing:
    def manual_seed(self, seed):
        out = _real.manual_seed(seed)
        state = bytearray(_real.get_state().numpy().tobytes())
        state[_MT_WORDS] = bytes(624 * 8)
        _real.set_state(torch.frombuffer(state, dtype=torch.uint8).clone())
        return out


_harness._generators[0] = _Zeroing()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_zeros(a.shape[0], b.shape[1])
