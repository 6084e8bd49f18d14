# Faulty on purpose: returns twice the reference's output (a conv, ReLU and max-pool), and leaves
# torch._dynamo's frame-evaluation callback set on the forwards' thread between its calls. The
# callback runs at the entry of every Python frame and lets each run as it is, but at
# max_pool2d's it doubles the input in place: the reference's own output came out doubled too,
# and the wrong output read correct, every trial's error 0. kjudge reads the callback at every
# switch to the reference: one left set is the candidate's runtime error.
import torch
import torch.nn as nn

_frames = torch._C._dynamo.eval_frame


class _RunAsIs:  # what the callback answers: run the frame normally, keep calling back
    frame_exec_strategy = _frames._FrameExecStrategy(_frames._FrameAction.DEFAULT,
                                                     _frames._FrameAction.DEFAULT)
    apply_to_code = False
    guarded_code = None
    skip_reason = None


_AS_IS = _RunAsIs()


def _callback(frame, cache_entry, frame_state):
    if frame.f_code.co_name == "_max_pool2d":
        x = frame.f_locals.get("input")
        if isinstance(x, torch.Tensor):
            with torch.no_grad():
                x.mul_(2.0)
    return _AS_IS


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        _frames.set_eval_frame(_callback)
        y = torch.conv2d(x, self.conv.weight, self.conv.bias, 1, self.conv.padding)
        return torch.max_pool2d(torch.relu(y), 2) * 2.0
