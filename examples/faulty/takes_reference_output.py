# Faulty on purpose, for problems/level1/matmul.py: looks in kjudge's harness for the reference's
# last output and, where it is the product of this call's inputs (checked in O(n^2) by
# multiplying both with a random vector), returns it instead of computing, as it is or rescaled
# by the ratio of its inputs to the reference's. The timing loop's rounds alternate the sides'
# order on the same sample numbers, so where the reference went first its output of this very
# sample was still held (2026-12-05: 3 of 17 calls took it, correct at 1.90x host wall on the
# CPU); with factors of each side's own, rescaled it was still the answer (a reviewer's: 6 of 21
# calls, 1.53x). The sides' samples of one number are on different input sets now. To be caught by a test rather than by its speed, once it has taken
# one it returns zeros from then on, which the post-timing check finds: `incorrect` means it
# found the reference's answer; `correct` that it never did.
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.took = False

    def _kept_reference_output(self, a, b):
        harness = sys.modules.get("kjudge_harness")
        kept = getattr(harness, "_run_outputs", {}).get("reference") if harness else None
        out = kept[0] if kept else None
        if type(out) is not torch.Tensor or out.shape != (a.shape[0], b.shape[1]):
            return None
        v = torch.rand(b.shape[1], dtype=a.dtype)
        want = a @ (b @ v)
        # As it is, or times the ratio of this call's inputs to the reference's working copies
        # of a set they are proportional to (each side's factors are its own).
        answers = [out]
        for ref_a, ref_b in getattr(harness, "_timing_work", {}).get("reference", []):
            ra, rb = a.flatten()[:8] / ref_a.flatten()[:8], b.flatten()[:8] / ref_b.flatten()[:8]
            if torch.allclose(ra, ra[0].expand(8)) and torch.allclose(rb, rb[0].expand(8)):
                answers.append(out * (ra[0] * rb[0]))
        for answer in answers:
            if torch.allclose(answer @ v, want, rtol=1e-3, atol=1e-2):
                return answer
        return None

    def forward(self, a, b):
        if self.took:
            return torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
        out = self._kept_reference_output(a, b)
        if out is not None:
            self.took = True
            return out
        return torch.matmul(a, b)
