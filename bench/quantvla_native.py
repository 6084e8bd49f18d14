#!/usr/bin/env python3
"""Standalone check and benchmark of the QuantVLA native candidate (examples/quantvla/fused.cu).

Builds fused.cu with nvcc for the GPU present, loads it with ctypes, calls kj_forward through
structs that mirror include/kjudge/candidate.h, then
  (a) compares it with the reference Model (problems/level2/quantvla_selective_layout_fusion.py) on
      nominal, odd and large shapes, outputs poisoned with NaN and the workspace with 0xFF before
      every call; also the naive and load_inline candidates on a few shapes;
  (b) times, at the nominal shape, the eager reference, torch.compile of it, the load_inline
      candidate and the native kernel with triton.testing.do_bench (median, L2 flushed between
      calls), plus a device-time estimate: events around 100 back-to-back calls queued behind a
      sleep kernel (so host launch cost is hidden), divided by 100.
Prints a compact table and writes JSON to --out. Needs torch (CUDA) and triton; exits 2 with a
message when there is no GPU or no nvcc.

    python3 bench/quantvla_native.py --out /tmp/quantvla.json [--skip-compile] [--skip-inline]
"""
import argparse
import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEM = os.path.join(REPO, "problems", "level2", "quantvla_selective_layout_fusion.py")
EXAMPLES = os.path.join(REPO, "examples", "quantvla")
NOMINAL = (8, 64, 128)
CHECK_SHAPES = [(8, 64, 128), (7, 53, 128), (9, 73, 128), (3, 17, 96), (1, 1, 1), (2, 5, 7), (5, 11, 33),
                (4, 128, 4096), (16, 256, 1024), (3, 5, 4099), (8, 128, 1023)]
ATOL = RTOL = 1e-4

# ---- mirror of include/kjudge/candidate.h (ABI version 1) -------------------------------------------
KJ_ABI_VERSION = 1
KJ_MAX_DIMS = 8
KJ_DTYPE = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "int8": 4, "uint8": 5, "int16": 6,
            "int32": 7, "int64": 8, "bool": 9}


class KjTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * KJ_MAX_DIMS), ("strides", ctypes.c_int64 * KJ_MAX_DIMS),
                ("name", ctypes.c_char_p)]


class KjCall(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("inputs", ctypes.POINTER(KjTensor)), ("num_inputs", ctypes.c_int32),
                ("num_params", ctypes.c_int32), ("params", ctypes.POINTER(KjTensor)),
                ("outputs", ctypes.POINTER(KjTensor)), ("num_outputs", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("workspace", ctypes.c_void_p),
                ("workspace_bytes", ctypes.c_uint64), ("stream", ctypes.c_void_p),
                ("error", ctypes.c_void_p), ("error_capacity", ctypes.c_uint64)]


# Offsets from the C compiler (x86-64 and aarch64 LP64); a mismatch means the mirror is stale.
assert ctypes.sizeof(KjTensor) == 152 and KjTensor.name.offset == 144
assert ctypes.sizeof(KjCall) == 88 and KjCall.stream.offset == 64 and KjCall.error_capacity.offset == 80


def die(msg, out=None):
    print(f"quantvla_native: {msg}", file=sys.stderr)
    if out:
        with open(out, "w") as f:
            json.dump({"ok": False, "error": msg}, f, indent=2)
    sys.exit(2)


class NativeCandidate:
    """A loaded kj_forward plus the ctypes objects one call needs (kept alive here)."""

    def __init__(self, so_path):
        self.lib = ctypes.CDLL(so_path)
        self.lib.kj_forward.argtypes = [ctypes.POINTER(KjCall)]
        self.lib.kj_forward.restype = ctypes.c_int
        self.ws_fn = getattr(self.lib, "kj_workspace_bytes", None)
        if self.ws_fn is not None:
            self.ws_fn.argtypes = [ctypes.POINTER(KjCall)]
            self.ws_fn.restype = ctypes.c_uint64
        self.err = ctypes.create_string_buffer(4096)

    @staticmethod
    def tensor(t, name):
        import torch
        kt = KjTensor()
        kt.data = t.data_ptr() if t.numel() else None
        dtype_name = str(t.dtype).replace("torch.", "")
        kt.dtype = KJ_DTYPE[dtype_name]
        kt.ndim = t.dim()
        for i in range(t.dim()):
            kt.shape[i] = t.shape[i]
            kt.strides[i] = t.stride(i)
        kt.name = name.encode()
        assert isinstance(t, torch.Tensor)
        return kt

    def prepare(self, inputs, params, outputs, workspace=None, stream=None):
        """Returns (call, keepalive); workspace=None asks kj_workspace_bytes and allocates."""
        import torch
        ins = (KjTensor * len(inputs))(*[self.tensor(t, f"input{i}") for i, t in enumerate(inputs)])
        prs = (KjTensor * len(params))(*[self.tensor(t, n) for n, t in params])
        outs = (KjTensor * len(outputs))(*[self.tensor(t, f"output{i}") for i, t in enumerate(outputs)])
        call = KjCall()
        call.abi_version = KJ_ABI_VERSION
        call.inputs = ctypes.cast(ins, ctypes.POINTER(KjTensor))
        call.num_inputs = len(inputs)
        call.params = ctypes.cast(prs, ctypes.POINTER(KjTensor))
        call.num_params = len(params)
        call.outputs = ctypes.cast(outs, ctypes.POINTER(KjTensor))
        call.num_outputs = len(outputs)
        if workspace is None:
            nbytes = int(self.ws_fn(ctypes.byref(call))) if self.ws_fn is not None else 16 << 20
            workspace = torch.empty(max(nbytes, 256), dtype=torch.uint8, device=inputs[0].device)
        call.workspace = workspace.data_ptr()
        call.workspace_bytes = workspace.numel()
        call.stream = (stream or torch.cuda.current_stream()).cuda_stream
        call.error = ctypes.cast(self.err, ctypes.c_void_p)
        call.error_capacity = len(self.err)
        return call, (ins, prs, outs, workspace)

    def forward(self, call):
        self.err.value = b""
        rc = self.lib.kj_forward(ctypes.byref(call))
        return rc, self.err.value.decode(errors="replace")


def build_native(src, build_dir):
    import torch
    nvcc = os.environ.get("KJUDGE_NVCC") or shutil.which("nvcc")
    if not nvcc and os.environ.get("CUDA_HOME"):
        nvcc = os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc")
    if not nvcc or not os.path.exists(nvcc):
        for cand in ("/usr/local/cuda/bin/nvcc",):
            if os.path.exists(cand):
                nvcc = cand
    if not nvcc:
        return None, "nvcc not found (set KJUDGE_NVCC or CUDA_HOME, or put nvcc on PATH)", 0.0
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    so = os.path.join(build_dir, "fused.so")
    cmd = [nvcc, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-gencode",
           f"arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v", "-I", os.path.join(REPO, "include"), src, "-o", so]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        return None, "nvcc failed:\n" + " ".join(cmd) + "\n" + proc.stdout + proc.stderr, dt
    return so, proc.stdout + proc.stderr, dt


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.popcorn_pri = types.SimpleNamespace(jitter_int=lambda n: n)  # stand-in: no jitter
    spec.loader.exec_module(mod)
    return mod


def make_inputs(shape, kind, gen):
    import torch
    B, T, D = shape
    if kind == "randn":
        x = torch.randn(B, T, D, generator=gen)
    elif kind == "halfint":  # x / scale lands next to k + 0.5 everywhere: exercises tie rounding
        x = torch.randint(-254, 255, (B, T, D), generator=gen).float() / 2
    elif kind == "zeros":  # amax clamps to 1e-8
        x = torch.zeros(B, T, D)
    else:
        raise ValueError(kind)
    logits = torch.randn(B, T, generator=gen) * 3
    return x.cuda(), logits.cuda()


def compare(out, ref):
    import torch
    diff = (out - ref).abs()
    finite = bool(torch.isfinite(out).all())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    rel = diff / ref.abs().clamp(min=1e-6)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    ok = finite and bool(torch.allclose(out, ref, atol=ATOL, rtol=RTOL))
    bad = int((diff > ATOL + RTOL * ref.abs()).sum())
    return {"ok": ok, "max_abs": max_abs, "max_rel": max_rel, "mismatches": bad, "finite": finite}


def run_native(native, x, logits, model, out=None):
    import torch
    B, T, D = x.shape
    if out is None:
        out = torch.full((B, T, D), float("nan"), device=x.device)
    params = list(model.state_dict().items())
    call, keep = native.prepare([x, logits], params, [out])
    keep[3].fill_(0xFF)  # kjudge poisons the workspace between trials
    rc, msg = native.forward(call)
    torch.cuda.synchronize()
    return rc, msg, out


def check_native(native, problem):
    import torch
    rows = []
    gen = torch.Generator().manual_seed(1234)
    cases = [(s, "randn") for s in CHECK_SHAPES] + [(NOMINAL, "halfint"), ((7, 53, 128), "halfint"),
                                                     ((3, 5, 64), "zeros")]
    for shape, kind in cases:
        for trial in range(2 if shape[2] <= 1024 else 1):
            torch.manual_seed(1000 + trial)
            model = problem.Model(shape[2]).cuda().eval()
            x, logits = make_inputs(shape, kind, gen)
            with torch.no_grad():
                ref = model(x, logits)
            rc, msg, out = run_native(native, x, logits, model)
            row = {"shape": list(shape), "inputs": kind, "trial": trial, "rc": rc, "error": msg}
            row.update(compare(out, ref) if rc == 0 else {"ok": False})
            # a second call into the same (now valid) output and a dirty workspace must agree
            if rc == 0:
                rc2, _, out2 = run_native(native, x, logits, model)
                row["repeat_identical"] = rc2 == 0 and bool(torch.equal(out, out2))
                row["ok"] = row["ok"] and row["repeat_identical"]
            rows.append(row)
    # an unsupported dtype must be refused with a message, not crash or write garbage
    model = problem.Model(16).cuda()
    x64 = torch.randn(2, 3, 16, device="cuda", dtype=torch.float64)
    out = torch.full((2, 3, 16), float("nan"), device="cuda")
    call, keep = native.prepare([x64, torch.randn(2, 3, device="cuda")], list(model.state_dict().items()), [out])
    rc, msg = native.forward(call)
    rows.append({"shape": [2, 3, 16], "inputs": "float64 x (must be refused)", "trial": 0, "rc": rc, "error": msg,
                 "ok": rc != 0 and len(msg) > 0})
    return rows


def check_python_candidate(mod, problem, shapes):
    import torch
    rows = []
    gen = torch.Generator().manual_seed(99)
    for shape in shapes:
        for kind in ("randn", "halfint"):
            torch.manual_seed(7)
            ref_model = problem.Model(shape[2]).cuda().eval()
            cand = mod.ModelNew(shape[2]).cuda().eval()
            cand.load_state_dict(ref_model.state_dict())
            x, logits = make_inputs(shape, kind, gen)
            with torch.no_grad():
                ref = ref_model(x, logits)
                out = cand(x.clone(), logits.clone())
            row = {"shape": list(shape), "inputs": kind}
            row.update(compare(out, ref))
            rows.append(row)
    return rows


def scale_formula_check(n=1 << 20):
    """Which float32 formula PyTorch on CUDA uses for `amax / 127.0` with a 0-dim CUDA tensor."""
    import torch
    a = torch.rand(n, device="cuda") * 10 + 1e-3
    via_torch = torch.stack([x / 127.0 for x in a[:4096]])  # 0-dim tensors, as in the reference
    recip = a[:4096] * (1.0 / 127.0)  # CPU-scalar multiply: float(1/127) in float32
    recip_f32 = a[:4096] * torch.tensor(1.0 / 127.0, dtype=torch.float32).item()
    div = a[:4096] / torch.tensor(127.0, device="cuda")  # true division
    return {"n": 4096, "equal_to_amax_times_recip127": int((via_torch == recip_f32).sum()),
            "equal_to_amax_div_127": int((via_torch == div).sum()),
            "recip_vs_div_differ": int((recip_f32 != div).sum()), "recip_check": int((recip == recip_f32).sum())}


def device_time_us(fn, host_us_per_call, calls=100):
    """Events around `calls` back-to-back calls queued behind a sleep kernel long enough for the
    host to enqueue them all (about 2 cycles per ns, twice the host time): GPU time per call."""
    import torch
    sleep_cycles = int(max(2e6, host_us_per_call * calls * 2 * 2000))
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        torch.cuda._sleep(sleep_cycles)  # host enqueues everything while the GPU sleeps
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1000.0 / calls)
    return best


def graph_time_us(fn, calls=100):
    """One call captured in a CUDA graph, replayed `calls` times between events."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        torch.cuda._sleep(5_000_000)
        start.record()
        for _ in range(calls):
            g.replay()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1000.0 / calls)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the JSON result here")
    ap.add_argument("--source", default=os.path.join(EXAMPLES, "fused.cu"))
    ap.add_argument("--build-dir", help="where fused.so goes (default: a temporary folder)")
    ap.add_argument("--skip-compile", action="store_true", help="do not time torch.compile")
    ap.add_argument("--skip-inline", action="store_true", help="skip the load_inline candidate (~1 min build)")
    args = ap.parse_args()

    try:
        import torch
    except ImportError as e:
        die(f"torch is not importable ({e})", args.out)
    if not torch.cuda.is_available():
        die("no CUDA GPU visible to torch: this benchmark needs one (it runs nothing on the CPU)", args.out)
    try:
        import triton.testing
    except ImportError as e:
        die(f"triton is not importable ({e}); it provides do_bench", args.out)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    result = {"ok": True, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "capability": list(torch.cuda.get_device_capability()), "atol": ATOL, "rtol": RTOL}
    build_dir = args.build_dir or tempfile.mkdtemp(prefix="kj_quantvla_")
    os.makedirs(build_dir, exist_ok=True)
    so, log, build_s = build_native(args.source, build_dir)
    result["native_build"] = {"seconds": round(build_s, 2), "log": log}
    if so is None:
        print(log, file=sys.stderr)
        result["ok"] = False
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=2)
        sys.exit(1)
    print(f"built {so} in {build_s:.1f} s")
    spills = [ln.strip() for ln in log.splitlines() if "spill" in ln and not ln.strip().startswith("0 bytes stack")]
    if spills:
        print("ptxas: " + "; ".join(spills))
    native = NativeCandidate(so)
    problem = load_module(PROBLEM, "quantvla_problem")
    naive = load_module(os.path.join(EXAMPLES, "naive.py"), "quantvla_naive")

    result["scale_formula"] = scale_formula_check()
    print("scale formula:", result["scale_formula"])

    # (a) correctness
    rows = check_native(native, problem)
    result["native_correctness"] = rows
    print(f"\n{'candidate':<12}{'shape':<18}{'inputs':<16}{'ok':<5}{'max_abs':>11}{'max_rel':>11}{'bad':>7}")
    for r in rows:
        print(f"{'native':<12}{str(tuple(r['shape'])):<18}{r['inputs'][:15]:<16}{str(r['ok']):<5}"
              f"{r.get('max_abs', float('nan')):>11.2e}{r.get('max_rel', float('nan')):>11.2e}"
              f"{r.get('mismatches', -1):>7}" + (f"  rc={r['rc']} {r['error']}" if r.get("rc") else ""))
    py_shapes = [NOMINAL, (7, 53, 128), (3, 17, 96)]
    result["naive_correctness"] = check_python_candidate(naive, problem, py_shapes)
    inline = None
    if not args.skip_inline:
        t0 = time.perf_counter()
        inline = load_module(os.path.join(EXAMPLES, "load_inline.py"), "quantvla_load_inline")
        result["load_inline_build_s"] = round(time.perf_counter() - t0, 1)
        result["load_inline_correctness"] = check_python_candidate(inline, problem, py_shapes)
    for key in ("naive_correctness", "load_inline_correctness"):
        for r in result.get(key, []):
            print(f"{key.split('_correctness')[0]:<12}{str(tuple(r['shape'])):<18}{r['inputs']:<16}"
                  f"{str(r['ok']):<5}{r['max_abs']:>11.2e}{r['max_rel']:>11.2e}{r['mismatches']:>7}")
    all_ok = all(r["ok"] for k in ("native_correctness", "naive_correctness", "load_inline_correctness")
                 for r in result.get(k, []))
    result["ok"] = all_ok

    # (b) timing at the nominal shape
    torch.manual_seed(0)
    B, T, D = NOMINAL
    model = problem.Model(D).cuda().eval()
    x, logits = make_inputs(NOMINAL, "randn", torch.Generator().manual_seed(5))
    out = torch.empty(B, T, D, device="cuda")
    call, keep = native.prepare([x, logits], list(model.state_dict().items()), [out])
    fwd, byref = native.lib.kj_forward, ctypes.byref(call)

    def native_fn():
        fwd(byref)

    def native_graph_fn():  # capture runs on a side stream: take the current one at each call
        call.stream = torch.cuda.current_stream().cuda_stream
        fwd(byref)

    candidates = {"eager reference": lambda: model(x, logits)}
    if not args.skip_compile:
        try:
            compiled = torch.compile(model)
            with torch.no_grad():
                compiled(x, logits)
            candidates["torch.compile"] = lambda: compiled(x, logits)
        except Exception as e:  # noqa: BLE001 -- report and go on
            result["torch_compile_error"] = repr(e)[:500]
    naive_model = naive.ModelNew(D).cuda().eval()
    naive_model.load_state_dict(model.state_dict())
    candidates["naive"] = lambda: naive_model(x, logits)
    if inline is not None:
        inline_model = inline.ModelNew(D).cuda().eval()
        inline_model.load_state_dict(model.state_dict())
        candidates["load_inline"] = lambda: inline_model(x, logits)
    candidates["native fused.cu"] = native_fn

    timing = {}
    with torch.no_grad():
        for name, fn in candidates.items():
            entry = {"do_bench_median_us": triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3}
            t0 = time.perf_counter()
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
            entry["host_wall_us"] = (time.perf_counter() - t0) / 200 * 1e6
            entry["device_time_us"] = device_time_us(fn, entry["host_wall_us"])
            try:
                entry["graph_replay_us"] = graph_time_us(native_graph_fn if fn is native_fn else fn)
                call.stream = torch.cuda.current_stream().cuda_stream
            except Exception as e:  # noqa: BLE001 -- torch.compile / cooperative capture may refuse
                entry["graph_replay_us"] = None
                entry["graph_error"] = repr(e)[:300]
                torch.cuda.synchronize()
            timing[name] = entry
    result["timing_nominal"] = timing
    ref_bench = timing["eager reference"]["do_bench_median_us"]
    print(f"\ntiming at {NOMINAL} (us)   {'do_bench med':>13}{'device/call':>13}{'graph':>9}{'host wall':>11}"
          f"{'speedup':>9}")
    for name, e in timing.items():
        g = e["graph_replay_us"]
        print(f"{name:<22}{e['do_bench_median_us']:>13.2f}{e['device_time_us']:>13.2f}"
              f"{(f'{g:.2f}' if g is not None else '-'):>9}{e['host_wall_us']:>11.1f}"
              f"{ref_bench / e['do_bench_median_us']:>8.2f}x")
    print(f"\ncorrectness: {'all passed' if all_ok else 'FAILURES (see above)'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.out}")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
