import os, sys, subprocess, importlib.util, torch, triton.testing
sys.path.insert(0, "bench")
spec = importlib.util.spec_from_file_location("qb", "bench/quantvla_native.py"); qb = importlib.util.module_from_spec(spec); spec.loader.exec_module(qb)
problem = qb.load_module(qb.PROBLEM, "p")
src = os.environ.get("SRC", "examples/quantvla/fused.cu")
variants = [v.split(":") for v in sys.argv[1:]]
torch.manual_seed(0)
shape = (8, 64, 128)
model = problem.Model(128).cuda().eval()
x, logits = qb.make_inputs(shape, "randn", torch.Generator().manual_seed(5))
with torch.no_grad(): ref = model(x, logits)
def warm(sec=0.4):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    import time; t = time.time()
    while time.time() - t < sec:
        for _ in range(10): a @ a
        torch.cuda.synchronize()
def clk():
    try: return torch.cuda.clock_rate()
    except Exception as e: return str(e)[:50]
print("idle clock", clk()); warm(); print("after warm clock", clk())
for name, flags in variants:
    so = f"/tmp/v_{name}.so"
    cmd = ["nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90", "-Iinclude", src, "-o", so] + flags.split()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode: print(name, r.stderr[-2000:]); continue
    nat = qb.NativeCandidate(so)
    out = torch.full(shape, float("nan"), device="cuda")
    call, keep = nat.prepare([x, logits], list(model.state_dict().items()), [out])
    rc, msg = nat.forward(call); torch.cuda.synchronize()
    ok = rc == 0 and torch.allclose(out, ref, atol=1e-4, rtol=1e-4)
    fwd, br = nat.lib.kj_forward, __import__("ctypes").byref(call)
    fn = lambda: fwd(br)
    warm(); c0 = clk()
    db = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3
    dt = qb.device_time_us(fn, 10.0)
    c1 = clk(); warm(); dt2 = qb.device_time_us(fn, 10.0); c2 = clk()
    print(f"{name:<14} rc={rc} ok={ok} do_bench={db:7.2f} device={dt:6.2f} {dt2:6.2f} clk {c0} {c1} {c2} {msg}")
