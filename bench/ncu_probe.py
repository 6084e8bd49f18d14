#!/usr/bin/env python3
"""A small program for Nsight Compute to profile while kjudge's own ncu driver is being written:
one forward of the QuantVLA reference (eager torch: several kernels plus a cuBLAS GEMM), one call
of the native candidate examples/quantvla/fused.cu, and one bf16 matrix product (tensor cores),
each inside an NVTX push/pop range of its own (kjudge_reference, kjudge_candidate, kjudge_extra)
after a warm-up outside any range. bench/ncu_capture.sh runs it under ncu to record the CSV
fixtures in tests/data/ncu/.

    python3 bench/ncu_probe.py [--build-dir DIR]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quantvla_native as qv  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=None)
    args = ap.parse_args()
    import torch
    build_dir = args.build_dir or tempfile.mkdtemp(prefix="ncu_probe_")
    so, log, _ = qv.build_native(os.path.join(qv.EXAMPLES, "fused.cu"), build_dir)
    if so is None:
        qv.die(log)
    native = qv.NativeCandidate(so)
    problem = qv.load_module(qv.PROBLEM, "quantvla_problem")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    gen = torch.Generator().manual_seed(1)
    x, logits = qv.make_inputs(qv.NOMINAL, "randn", gen)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for _ in range(3):  # warm-up outside the ranges: cuBLAS heuristics, lazy module loading
            model(x, logits)
            qv.run_native(native, x, logits, model)
            a @ b
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("kjudge_reference")
        ref = model(x, logits)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        out = torch.full_like(ref, float("nan"))
        params = list(model.state_dict().items())
        call, keep = native.prepare([x, logits], params, [out])
        torch.cuda.nvtx.range_push("kjudge_candidate")
        rc, msg = native.forward(call)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("kjudge_extra")
        a @ b
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    print("native rc", rc, msg, "match", qv.compare(out, ref))


if __name__ == "__main__":
    main()
