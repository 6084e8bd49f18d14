"""Does another process's GPU work move a PyTorch forward's device figure outside kjudge?

kjudge read the QuantVLA reference's graph replay at 33.7 µs next to a process launching a small
kernel every millisecond, against 38.5 µs alone, with the same CUPTI kernel durations; the C++
probe (idle_clock.cu: graphs of 1 and 14 spin kernels) did not move. This script takes samples as
kjudge does (L2 flushed by a kernel writing twice its size, synchronised, the stream held by
torch.cuda._sleep while the events and the work are queued) in one process, rotating kinds:
  ref-graph:   torch.cuda.graph replay of the QuantVLA reference (B=8, T=64, D=128);
  ref-eager:   its own launches;
  chain-graph: a graph of 14 tiny elementwise kernels (x.mul_(1.0001) on 512 floats).
Prints medians and quartiles a kind. Run it alone and next to tests/e2e/kj_busy_gpu.
Usage: python3 bench/gpu_idle/torch_neighbour.py <label> [samples]
"""
import os
import statistics
import sys
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_problem():
    pri = types.ModuleType("popcorn_pri")
    pri.jitter_int = lambda n: n
    sys.modules["popcorn_pri"] = pri
    path = os.path.join(ROOT, "problems", "level2", "quantvla_selective_layout_fusion.py")
    ns = {"__name__": "problem", "popcorn_pri": pri}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    ns = load_problem()
    torch.manual_seed(0)
    model = ns["Model"](*ns["get_init_inputs"]()).cuda()
    inputs = [t.cuda() for t in ns["get_inputs"]()]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, device="cuda")
    tiny = torch.ones(512, device="cuda")

    def chain():
        for _ in range(14):
            tiny.mul_(1.0001)

    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
            chain()
        torch.cuda.synchronize()
        g_ref, g_chain = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(g_ref):
            model(*inputs)
        with torch.cuda.graph(g_chain):
            chain()
        kinds = {
            "ref-graph": g_ref.replay,
            "ref-eager": lambda: model(*inputs),
            "chain-graph": g_chain.replay,
        }
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        got = {k: [] for k in kinds}
        for i in range(samples + 20):
            for k, fn in kinds.items():
                flush.fill_(float(i))
                torch.cuda.synchronize()
                torch.cuda._sleep(20000)  # cycles: ~10 µs, longer than queueing the sample
                e0.record()
                fn()
                e1.record()
                torch.cuda.synchronize()
                if i >= 20:
                    got[k].append(e0.elapsed_time(e1) * 1e3)
    for k, v in got.items():
        q = statistics.quantiles(v, n=4)
        print("%-12s %-12s median %7.2f us  q1 %7.2f  q3 %7.2f  n %d" % (
            label, k, statistics.median(v), q[0], q[2], len(v)))


if __name__ == "__main__":
    main()
