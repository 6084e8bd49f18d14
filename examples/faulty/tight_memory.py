# NOT FAULTY: a correct softmax whose forward takes a 4 GiB scratch buffer, and which, on its
# first call on a GPU, caps PyTorch's caching allocator at what it then holds plus 1.5 times that
# buffer (torch.cuda.set_per_process_memory_fraction), and keeps smaller requests out of cached
# blocks of 2 GiB or more (max_split_size_mb), so that kjudge's own allocations do not split the
# cached scratch block. Both sides' forwards then fit, eagerly and replayed from graphs; but while
# its graphs are captured, the allocator cannot hand the scratch blocks it keeps cached (from the
# eager forwards) back for the graph's pool, so the first capture runs out of memory. kjudge then
# empties the cache and captures once more (tests/e2e/eval_gpu_test.cpp); without that, neither
# side would replay graphs.
import torch
import torch.nn as nn

SCRATCH_BYTES = 4 << 30


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.capped = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(SCRATCH_BYTES, dtype=torch.uint8, device=x.device)
        if x.is_cuda and not self.capped and not torch.cuda.is_current_stream_capturing():
            limit = torch.cuda.memory_reserved(x.device) + SCRATCH_BYTES * 3 // 2
            total = torch.cuda.get_device_properties(x.device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), x.device)
            torch.cuda.memory._set_allocator_settings("max_split_size_mb:2048")
            self.capped = True
        scratch[:1].zero_()
        return torch.softmax(x, dim=-1) + scratch[:1].float()
