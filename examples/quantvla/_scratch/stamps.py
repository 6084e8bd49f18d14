import os, sys, subprocess, importlib.util, torch, ctypes
spec = importlib.util.spec_from_file_location("qb", "bench/quantvla_native.py"); qb = importlib.util.module_from_spec(spec); spec.loader.exec_module(qb)
problem = qb.load_module(qb.PROBLEM, "p")
for name, flags in [v.split(":") for v in sys.argv[1:]]:
    so = f"/tmp/s_{name}.so"
    r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90", "-Iinclude", "examples/quantvla/fused.cu", "-o", so, "-DKJQ_STAMPS"] + flags.split(), capture_output=True, text=True)
    if r.returncode: print(r.stderr[-1500:]); continue
    nat = qb.NativeCandidate(so)
    model = problem.Model(128).cuda().eval()
    x, logits = qb.make_inputs((8, 64, 128), "randn", torch.Generator().manual_seed(5))
    out = torch.empty(8, 64, 128, device="cuda")
    call, keep = nat.prepare([x, logits], list(model.state_dict().items()), [out])
    ws = keep[3]
    for _ in range(50): nat.forward(call)
    torch.cuda._sleep(2_000_000)
    for _ in range(20): nat.forward(call)
    torch.cuda.synchronize()
    st = ws[32768:32768 + 128 * 64].view(torch.int64).view(128, 8).cpu()
    d = (st[:, 1:7] - st[:, 0:6]).float()
    print(name, "cycles per phase (median over blocks) [prefetch, phase1+reduce, barrier, scale, tile loop, store]:", d.median(0).values.tolist(), "max:", d.max(0).values.tolist())
    print("  total cycles median", float((st[:, 6] - st[:, 0]).float().median()), "start skew ns (globaltimer)", int(st[:, 7].max() - st[:, 7].min()))
