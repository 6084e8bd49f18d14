# Faulty on purpose: returns zeros for problems/level1/matmul.py. At import it rebinds
# torch.random.default_generator to a wrapper whose manual_seed() seeds torch's CPU generator and
# then zeroes its Mersenne Twister words, so that every draw after a seeding gives 0.
# torch.manual_seed looks the binding up as it runs: while kjudge seeded its trials with it,
# every trial's inputs (the held-out trial's too) were zeros, and this read correct at 515x on the
# CPU. kjudge now seeds through the generators it bound at load, and the rebinding is kept to the
# candidate's own calls (candidate_changed_torch_state): incorrect.
import torch
import torch.nn as nn

_real = torch.random.default_generator
_MT_WORDS = slice(24, 24 + 624 * 8)  # where the generator's state holds them, as bytes


class _Zeroing:
    def manual_seed(self, seed):
        out = _real.manual_seed(seed)
        state = bytearray(_real.get_state().numpy().tobytes())
        state[_MT_WORDS] = bytes(624 * 8)
        _real.set_state(torch.frombuffer(state, dtype=torch.uint8).clone())
        return out

    def __getattr__(self, name):
        return getattr(_real, name)


torch.random.default_generator = _Zeroing()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_zeros(a.shape[0], b.shape[1])
