# FAULTY (for timing only): unjoined_stream.py's side stream (a softmax, then a kernel that spins
# for about 10 ms, neither waited for by the timed stream nor by the host), and on the timed stream
# a check that waits for the host (.item()). The forward's host sync leaves the device figure
# untaken; its stream figure, events around the call as issued, would time the check alone, and
# must be withheld too: the CUPTI forward finds the side stream's kernels outside its events even
# though the host waited inside them.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            self.side = torch.cuda.Stream(device=x.device)  # non-blocking, as torch makes them
        self.side.wait_stream(torch.cuda.current_stream())  # x is ready before the side reads it
        with torch.cuda.stream(self.side):
            y = torch.softmax(x, dim=-1)
            torch.cuda._sleep(20_000_000)  # clock cycles: about 10 ms at 2 GHz
        if not bool(torch.isfinite(x).all().item()):  # the host waits for the timed stream only
            raise ValueError("non-finite input")
        return y
