"""Does a CUDA graph captured in the process change how fast a kernel runs afterwards?

kjudge's evaluations with graph replay (the default) read the QuantVLA native kernel 0.2-0.4 us
slower by graph replay than `--no-graph` reads it eagerly, and the eager CUPTI forward after timing
(graphs dropped by then) 0.3 us longer as well (3.84-3.94 against 3.55 us), where the C++ bench
(bench/quantvla_phases/sample_context.cu: graphs of the kernel, no PyTorch graph) finds eager and
replay alike. This script times, in one process, the native kernel eagerly (ctypes kj_forward,
held behind torch.cuda._sleep, L2 flushed, its own forward just before), and the eager QuantVLA
reference, in stages:

  1. before any graph (twice: drift);
  2. after torch.cuda.graph captured the reference (with a pool of its own, on a side stream of
     torch's; kjudge captures on a blocking stream of its own) and replayed it, the graph still
     held;
  3. after the graph was dropped;
  4. after torch.cuda.empty_cache();
and the kernel by replay of torch.cuda.graph captures of it, one per set, rotated as the eager
samples rotate the sets (captured last; the version run in the fifteenth session replayed one
graph of set 0 against eager samples on eight sets).

Usage (GPU): python3 bench/graph_state.py [--samples N] [--so PATH]. Builds
examples/quantvla/fused.cu into a shared library with nvcc unless --so names one.
"""
import argparse
import ctypes
import gc
import os
import statistics
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "problems", "level2"))

MAX_DIMS = 8


class KjTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("name", ctypes.c_char_p)]


class KjCall(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("inputs", ctypes.POINTER(KjTensor)), ("num_inputs", ctypes.c_int32),
                ("num_params", ctypes.c_int32), ("params", ctypes.POINTER(KjTensor)),
                ("outputs", ctypes.POINTER(KjTensor)), ("num_outputs", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("workspace", ctypes.c_void_p),
                ("workspace_bytes", ctypes.c_uint64), ("stream", ctypes.c_void_p),
                ("error", ctypes.c_char_p), ("error_capacity", ctypes.c_uint64)]


def header_defines(*names):
    """The integer values of `names` as include/kjudge/candidate.h #defines them."""
    found = {}
    with open(os.path.join(ROOT, "include", "kjudge", "candidate.h")) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "#define" and parts[1] in names:
                found[parts[1]] = int(parts[2].rstrip("uU"), 0)
    missing = [n for n in names if n not in found]
    if missing:
        raise RuntimeError("not in candidate.h: " + ", ".join(missing))
    return [found[n] for n in names]


def to_kj(t, name):
    k = KjTensor()
    k.data = t.data_ptr()
    k.dtype = 0  # f32
    k.ndim = t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        k.shape[i] = s
        k.strides[i] = st
    k.name = name.encode()
    return k


def build(so):
    arch = "sm_%d%d" % torch.cuda.get_device_capability()
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=" + arch, "-shared", "-Xcompiler", "-fPIC",
                    "-I" + os.path.join(ROOT, "include"), "-o", so,
                    os.path.join(ROOT, "examples", "quantvla", "fused.cu")], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--so", default=None)
    args = ap.parse_args()
    abi, dims = header_defines("KJ_ABI_VERSION", "KJ_MAX_DIMS")
    assert dims == MAX_DIMS
    so = args.so or os.path.join(tempfile.mkdtemp(), "quantvla.so")
    if args.so is None:
        build(so)
    lib = ctypes.CDLL(so)
    lib.kj_forward.argtypes = [ctypes.POINTER(KjCall)]
    lib.kj_forward.restype = ctypes.c_int

    import quantvla_selective_layout_fusion as problem
    torch.manual_seed(0)
    dev = "cuda"
    model = problem.Model(128).to(dev)
    sets = [(torch.randn(8, 64, 128, device=dev), torch.randn(8, 64, device=dev))
            for _ in range(8)]
    out = torch.empty(8, 64, 128, device=dev)
    w, b = model.out_proj.weight.detach(), model.out_proj.bias.detach()
    err = ctypes.create_string_buffer(512)
    keep = []

    def make_call(x, logits, stream):
        ins = (KjTensor * 2)(to_kj(x, "input0"), to_kj(logits, "input1"))
        ps = (KjTensor * 2)(to_kj(w, "out_proj.weight"), to_kj(b, "out_proj.bias"))
        outs = (KjTensor * 1)(to_kj(out, "output0"))
        c = KjCall()
        c.abi_version = abi
        ptr = ctypes.POINTER(KjTensor)
        c.inputs, c.num_inputs = ctypes.cast(ins, ptr), 2
        c.params, c.num_params = ctypes.cast(ps, ptr), 2
        c.outputs, c.num_outputs = ctypes.cast(outs, ptr), 1
        c.workspace, c.workspace_bytes = None, 0
        c.stream = stream
        c.error, c.error_capacity = ctypes.cast(err, ctypes.c_char_p), 512
        keep.append((ins, ps, outs, c))
        return c

    stream = torch.cuda.current_stream().cuda_stream
    calls = [make_call(x, l, stream) for x, l in sets]

    def native(k):
        if lib.kj_forward(ctypes.byref(calls[k % 8])) != 0:
            raise RuntimeError(err.value.decode())

    def reference(k):
        with torch.no_grad():
            model(*sets[k % 8])

    native(0)
    torch.cuda.synchronize()
    with torch.no_grad():
        expect = model(*sets[0])
    if not torch.allclose(out, expect, atol=1e-4, rtol=1e-4):
        raise RuntimeError("the native forward is wrong")

    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample(fn, k, timed=None):
        fn(k + 1)  # its own forward first, on another set
        flush.fill_(k & 0xFF)
        torch.cuda.synchronize()
        torch.cuda._sleep(2000000)  # ~1 ms: what follows (Python-issued) queues behind it
        start.record()
        (timed or fn)(k)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3

    def stage(label, replay=None):
        nat, ref = [], []
        for k in range(args.samples + 20):
            a = sample(native, k)
            r = sample(reference, k)
            if k >= 20:
                nat.append(a)
                ref.append(r)
        line = "%-46s native %.2f us (q1 %.2f, q3 %.2f), reference %.2f us" % (
            label, statistics.median(nat), statistics.quantiles(nat)[0],
            statistics.quantiles(nat)[2], statistics.median(ref))
        if replay is not None:
            g = [sample(native, k, replay) for k in range(args.samples + 20)][20:]
            line += "; native by graph replay %.2f us" % statistics.median(g)
        print(line, flush=True)

    stage("1. before any graph")
    stage("1. before any graph, again")
    capture_stream = torch.cuda.Stream()
    pool = torch.cuda.graph_pool_handle()
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph, pool=pool, stream=capture_stream):
        model(*sets[0])
    for _ in range(8):
        graph.replay()
    torch.cuda.synchronize()
    stage("2. the reference captured and replayed, held")
    del graph
    gc.collect()
    stage("3. the reference's graph dropped")
    torch.cuda.empty_cache()
    stage("4. after empty_cache()")
    ngraphs = []
    for x, logits in sets:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=capture_stream):
            c = make_call(x, logits, capture_stream.cuda_stream)
            if lib.kj_forward(ctypes.byref(c)) != 0:
                raise RuntimeError(err.value.decode())
        ngraphs.append(g)
    torch.cuda.synchronize()
    stage("5. the native kernel captured too", replay=lambda k: ngraphs[k % 8].replay())


if __name__ == "__main__":
    main()
