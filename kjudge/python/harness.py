"""kjudge's in-worker harness: the Python half of the bridge (kjudge/python/bridge.cpp).

It runs inside the worker's embedded interpreter, never in the orchestrator. It loads a
KernelBench-format problem and a candidate, builds both models under one seed, copies the
reference's weights into the candidate, draws trial inputs, runs each side on its own clone of the
inputs, and hands outputs to C++ as host tensors (the comparison and all timing happen in C++).

Exceptions: ProblemError (the reference side failed), CandidateError (ModelNew failed), EnvError
(torch or the device is unusable). bridge.cpp maps them onto kj::error kinds.
"""

import importlib.util
import math
import os
import sys
import time
import traceback

import torch

import _kjudge  # the embedded C++ module: popcorn_pri (shape jitter), see bridge.cpp


class ProblemError(Exception):
    pass


class CandidateError(Exception):
    pass


class EnvError(Exception):
    pass


DEVICE = "cpu"
_problem = None
_candidate = None
_ref = None
_cand = None
_params = []  # contiguous copies of the reference's parameters/buffers (native views)
_trial = {}
_timing_base = []  # pristine timing input sets
_timing_work = {"reference": [], "candidate": []}  # each side's working copies (refreshed)
_timing_native_outputs = []
_timing_native_in = {}  # set -> the tensors the native candidate's views of that set point to
_timing_ref_out = []  # the reference's outputs on timing set 0 (shapes for native outputs)
_timing_graphs = {}  # side -> (graphs per set, their static outputs), while captured
_SIDES = {"reference": ("Model", ProblemError), "candidate": ("ModelNew", CandidateError)}


def _first_line(exc, limit=300):
    """The first line of an exception's message (its type's name when it has none)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def _format_exception(exc, limit=12):
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines)
    tail = text.splitlines()[-limit * 3:]
    return "\n".join(tail)


# --- environment -------------------------------------------------------------------------------

def setup(device):
    """Selects the device. Returns torch's current stream handle (0: the legacy default stream,
    which is also where load_inline kernels launched without a stream go)."""
    global DEVICE
    DEVICE = device
    if device == "cuda":
        if not torch.cuda.is_available():
            raise EnvError("torch.cuda.is_available() is False: torch %s (CUDA %s) sees no GPU"
                           % (torch.__version__, torch.version.cuda))
        torch.cuda.init()
        torch.empty(1, device="cuda")  # create the context now, not inside the first trial
        return int(torch.cuda.current_stream().cuda_stream)
    return 0


def environment():
    return {
        "python_version": sys.version.split()[0],
        "python_executable": sys.executable,
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda or "",
    }


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


# --- loading ------------------------------------------------------------------------------------

def _exec_file(path, module_name):
    """Executes a file as a fresh module with popcorn_pri already in its namespace."""
    path = os.path.abspath(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__["popcorn_pri"] = _kjudge.popcorn_pri
    folder = os.path.dirname(path)
    if folder not in sys.path:
        # Appended, not prepended: a candidate named triton.py must not shadow the real package.
        sys.path.append(folder)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_problem(path):
    global _problem
    try:
        module = _exec_file(path, "kjudge_problem")
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit in module code ...
        raise ProblemError("problem file %s failed to load:\n%s" % (path, _format_exception(exc)))
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError("problem file %s does not define %s (KernelBench format needs Model, "
                           "get_inputs and get_init_inputs)" % (path, ", ".join(missing)))
    _problem = module


def tolerance():
    """Per-problem tolerance override: module constants KJUDGE_ATOL / KJUDGE_RTOL, each a finite
    number >= 0 (anything else is the problem's error, named)."""
    out = {}
    for key, name in (("atol", "KJUDGE_ATOL"), ("rtol", "KJUDGE_RTOL")):
        if hasattr(_problem, name):
            value = getattr(_problem, name)
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                number = math.nan
            if not math.isfinite(number) or number < 0:
                raise ProblemError("%s = %r: a tolerance must be a finite number >= 0"
                                   % (name, value))
            out[key] = number
    return out


def load_candidate(path):
    global _candidate
    start = time.perf_counter()
    try:
        module = _exec_file(path, "kjudge_candidate")
    except BaseException as exc:
        raise CandidateError("candidate %s failed to build or import:\n%s"
                             % (path, _format_exception(exc, limit=400)))
    if not hasattr(module, "ModelNew"):
        raise CandidateError("candidate %s does not define ModelNew" % path)
    _candidate = module
    return time.perf_counter() - start


# --- models -------------------------------------------------------------------------------------

def _to_device(x):
    if isinstance(x, torch.Tensor):
        return x.to(DEVICE)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v) for v in x)
    return x


def _seed(seed):
    torch.manual_seed(seed)  # seeds every device too


def _copy_weights(ref, cand):
    """Copies the reference's state_dict into the candidate: by name when every reference entry
    has a same-shaped namesake, else by order and shape. Returns the method that held."""
    rs = ref.state_dict()
    cs = cand.state_dict()
    if not rs:
        return "none"
    with torch.no_grad():
        if all(k in cs and cs[k].shape == v.shape for k, v in rs.items()):
            for k, v in rs.items():
                cs[k].copy_(v)
            return "by_name"
        # In order: each reference tensor takes the next candidate tensor of the same shape.
        cand_items = list(cs.values())
        pairs, j = [], 0
        for v in rs.values():
            while j < len(cand_items) and cand_items[j].shape != v.shape:
                j += 1
            if j == len(cand_items):
                pairs = None
                break
            pairs.append((cand_items[j], v))
            j += 1
        if pairs is not None:
            for dst, src in pairs:
                dst.copy_(src)
            return "by_order"
    return "seed_only"


def build_reference(seed):
    """Model(*get_init_inputs()) under the seed (KernelBench: seed, init inputs, seed, Model)."""
    global _ref, _params, _init
    try:
        _seed(seed)
        got = _problem.get_init_inputs()
    except BaseException as exc:
        raise ProblemError("get_init_inputs() failed:\n%s" % _format_exception(exc))
    _init = _to_device(_input_list(got, "get_init_inputs()", flat=False))
    try:
        with torch.no_grad():
            _seed(seed)
            _ref = _problem.Model(*_init).to(DEVICE).eval()
    except BaseException as exc:
        raise ProblemError("Model(*get_init_inputs()) failed:\n%s" % _format_exception(exc))
    # Native candidates get copies: writing through kj_call.params must not touch the reference.
    state = _ref.state_dict()
    _params = [v.detach().clone(memory_format=torch.contiguous_format) for v in state.values()]
    _param_names.clear()
    _param_names.extend(state.keys())


def build_candidate(seed):
    """ModelNew under the same seed, then the reference's weights copied in. Returns the copy
    method; "native" when the candidate is a native library (it gets copies of the reference's
    parameters and buffers, _params)."""
    global _cand
    if _candidate is None:
        _cand = None
        return "native"
    try:
        with torch.no_grad():
            _seed(seed)
            _cand = _candidate.ModelNew(*_init).to(DEVICE).eval()
    except BaseException as exc:
        raise CandidateError("ModelNew(*get_init_inputs()) failed:\n%s" % _format_exception(exc))
    try:
        return _copy_weights(_ref, _cand)
    except BaseException as exc:
        raise CandidateError("copying the reference's weights into ModelNew failed:\n%s"
                             % _format_exception(exc))


_param_names = []
_init = []


def parameters():
    return [_describe(t, name) for t, name in zip(_params, _param_names)]


# --- inputs and outputs -------------------------------------------------------------------------

def _input_list(got, what, flat=True):
    """`what`'s result as a list: a list or tuple (a bare tensor would be split along its first
    dimension). `flat`: forward inputs, tensors and Python numbers only; nested containers would
    escape the copies and checks each input gets. Either is the problem's error. Constructor
    arguments may nest (layer sizes as a list, as in KernelBench's level 3)."""
    if not isinstance(got, (list, tuple)):
        raise ProblemError("%s returned a %s, not a list or tuple of inputs"
                           % (what, type(got).__name__))
    for i, x in enumerate(got if flat else ()):
        if isinstance(x, (list, tuple, dict, set)):
            raise ProblemError("%s item %d is a %s: kjudge passes tensors and Python numbers, "
                               "not containers of them" % (what, i, type(x).__name__))
    return list(got)


def _make_inputs(data_seed, jitter_seed, scale, jitter=True):
    _kjudge.popcorn_pri.reset(jitter_seed, scale, jitter)
    try:
        _seed(data_seed)
        got = _problem.get_inputs()
    except BaseException as exc:
        raise ProblemError("get_inputs() failed:\n%s" % _format_exception(exc))
    return [_to_device(x) for x in _input_list(got, "get_inputs()")]


def _clone(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def _as_tensor_input(x):
    """Native ABI view of an input: tensors made contiguous, Python scalars as 0-dim tensors."""
    if isinstance(x, torch.Tensor):
        return x.contiguous()
    if isinstance(x, bool):
        return torch.tensor(x, dtype=torch.bool, device=DEVICE)
    if isinstance(x, int):
        return torch.tensor(x, dtype=torch.int64, device=DEVICE)
    if isinstance(x, float):
        return torch.tensor(x, dtype=torch.float64, device=DEVICE)
    raise ProblemError("input of type %s cannot be passed to a native candidate" % type(x).__name__)


def _number(v, who, error_type):
    """A Python number output as a float64 tensor (an int too large for one is `who`'s error)."""
    try:
        return torch.tensor(v, dtype=torch.float64)
    except (OverflowError, RuntimeError) as exc:
        raise error_type("%s returned a Python %s that no float64 holds (%s)"
                         % (who, type(v).__name__, _first_line(exc)))


def _normalise(out, who, error_type):
    """Outputs as a list of tensors: a tensor, a tuple/list of tensors or numbers, or a number."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (bool, int, float)):
        return [_number(out, who, error_type)]
    if isinstance(out, (list, tuple)):
        items = []
        for i, v in enumerate(out):
            if isinstance(v, torch.Tensor):
                items.append(v)
            elif isinstance(v, (bool, int, float)):
                items.append(_number(v, who, error_type))
            else:
                raise error_type("%s returned a %s whose item %d is a %s, not a tensor or number"
                                 % (who, type(out).__name__, i, type(v).__name__))
        return items
    raise error_type("%s returned %s, not a tensor, a tuple/list of tensors, or a number"
                     % (who, type(out).__name__))


def _describe(t, name=""):
    return {
        "data": int(t.data_ptr()),
        "dtype": str(t.dtype).replace("torch.", ""),
        "shape": list(t.shape),
        "strides": list(t.stride()),
        "name": name,
    }


def _host(t):
    return t.detach().to("cpu").contiguous()


def _poison(t):
    """Fills t with what no honest output holds: NaN, True, or the byte 0x5A."""
    if t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.view(torch.uint8).fill_(0x5A)
    return t


def _poisoned_like(t):
    return _poison(torch.empty(t.shape, dtype=t.dtype, device=DEVICE))


def _input_info(inputs):
    shapes, dtypes = [], []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            shapes.append(list(x.shape))
            dtypes.append(str(x.dtype).replace("torch.", ""))
        else:
            shapes.append([])
            dtypes.append(type(x).__name__)
    jitter = {str(k): int(v) for k, v in _kjudge.popcorn_pri.draws().items()}
    return {"shapes": shapes, "dtypes": dtypes, "jitter": jitter}


# --- correctness trials -------------------------------------------------------------------------

def trial_begin(seed, scale):
    """The trial's inputs, one copy per side. The reference runs here only for a native candidate
    (its output buffers take the reference's shapes); for a Python candidate, trial_run_reference
    runs it after the candidate: the candidate shares this interpreter, and while it runs no
    output of the reference for these inputs exists for it to find and hand back."""
    _trial.clear()
    inputs = _make_inputs(seed, seed, scale)
    info = _input_info(inputs)
    _trial["pristine"] = [_clone(x) for x in inputs]
    _trial["cand_in"] = [_clone(x) for x in inputs]
    _trial["ref_in"] = [_clone(x) for x in inputs]
    _trial["shapes"] = info["shapes"]
    _trial["cand_ms"] = 0.0
    if _candidate is None:
        trial_run_reference()
    return info


def trial_run_reference():
    ref_in = _trial.pop("ref_in")
    try:
        start = time.perf_counter()
        with torch.no_grad():
            out = _ref(*ref_in)
        synchronize()
        _trial["ref_ms"] = (time.perf_counter() - start) * 1e3
    except BaseException as exc:
        raise ProblemError("the reference Model failed on trial inputs %s:\n%s"
                           % (_trial["shapes"], _format_exception(exc)))
    _trial["ref_out"] = _normalise(out, "Model.forward", ProblemError)


def trial_run_candidate():
    try:
        start = time.perf_counter()
        with torch.no_grad():
            out = _cand(*_trial["cand_in"])
        synchronize()
        _trial["cand_ms"] = (time.perf_counter() - start) * 1e3
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the candidate's
        raise CandidateError("ModelNew.forward raised:\n%s" % _format_exception(exc))
    _trial["cand_out"] = _normalise(out, "ModelNew.forward", CandidateError)


def trial_native_inputs():
    _trial["native_in"] = [_as_tensor_input(x) for x in _trial["cand_in"]]
    return [_describe(t, "input%d" % i) for i, t in enumerate(_trial["native_in"])]


def trial_native_outputs():
    _trial["cand_out"] = [_poisoned_like(t) for t in _trial["ref_out"]]
    return [_describe(t, "output%d" % i) for i, t in enumerate(_trial["cand_out"])]


def allocator_memory(reset_peak):
    """(allocated, peak allocated since the last reset, reserved) bytes of torch's caching
    allocator on the current device; zeros on the CPU. reset_peak: reset the peak first."""
    if DEVICE != "cuda":
        return (0, 0, 0)
    if reset_peak:
        torch.cuda.reset_peak_memory_stats()
    return (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(),
            torch.cuda.memory_reserved())


def synchronize_candidate():
    try:
        synchronize()
    except BaseException as exc:
        raise CandidateError("the device reported an error after the candidate ran:\n%s"
                             % _format_exception(exc))


def _same(a, b):
    """Whether input `a` still equals its pristine copy `b`. One that changed device, layout or
    anything torch.equal cannot compare counts as modified."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        try:
            return (a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
                    and bool(torch.equal(a, b)))
        except BaseException:
            return False
    return True


def _hosts(outs, error_type, whose):
    """Host copies of one side's outputs; a failure is that side's error."""
    try:
        return [_host(t) for t in outs]
    except BaseException as exc:
        raise error_type("copying %s outputs failed:\n%s" % (whose, _format_exception(exc)))


def trial_finish():
    modified = [i for i, (a, b) in enumerate(zip(_trial["cand_in"], _trial["pristine"]))
                if not _same(a, b)]
    ref_host = _hosts(_trial["ref_out"], ProblemError, "the reference's")
    cand_host = _hosts(_trial["cand_out"], CandidateError, "the candidate's")
    _trial["host"] = (ref_host, cand_host)  # keep the memory alive for the C++ views
    return {
        "reference": [_describe(t) for t in ref_host],
        "candidate": [_describe(t) for t in cand_host],
        "inputs_modified": modified,
        "reference_ms": _trial["ref_ms"],
        "candidate_ms": _trial["cand_ms"],
    }


# --- timing -------------------------------------------------------------------------------------
#
# Every timed call gets inputs nobody has seen in that form: before each sample the chosen set is
# rewritten from its pristine base, floating-point tensors scaled by a factor that changes with
# every sample (integer and bool tensors, indices and masks, are rotated among the sets, not
# changed). Each side has its own working copy, so a candidate that writes into its inputs cannot
# change what the reference is timed on. After sampling, timing_check_* runs both sides once more
# on a fresh rewrite and the outputs are compared: a candidate that replays results it cached
# during timing fails there.

def _bytes(inputs):
    return sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))


def _contiguous_clone(x):
    return x.clone(memory_format=torch.contiguous_format) if isinstance(x, torch.Tensor) else x


def timing_setup(max_sets, data_seed, byte_budget):
    """Input sets at the problem's nominal sizes (no jitter) with different data: as many as fit
    in byte_budget (counting the pristine base and one working copy per side), at least 2 and at
    most max_sets."""
    _timing_base.clear()
    _timing_work["reference"] = []
    _timing_work["candidate"] = []
    _timing_native_outputs.clear()
    _timing_native_in.clear()
    first = _make_inputs(data_seed, data_seed, 1, jitter=False)
    info = _input_info(first)
    set_bytes = _bytes(first)
    count = max_sets if set_bytes == 0 else max(2, min(max_sets, byte_budget // (3 * set_bytes)))
    _timing_base.append(first)
    for i in range(1, count):
        _timing_base.append(_make_inputs(data_seed + 7919 * i, data_seed, 1, jitter=False))
    for side in ("reference", "candidate"):
        _timing_work[side] = [[_contiguous_clone(x) for x in base] for base in _timing_base]
    info["sets"] = len(_timing_base)
    info["bytes_per_set"] = set_bytes
    # The reference's outputs at these shapes: their bytes bound what any candidate must write.
    try:
        with torch.no_grad():
            out = _normalise(_ref(*_timing_base[0]), "Model.forward", ProblemError)
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("the reference Model failed on the timing inputs:\n%s"
                           % _format_exception(exc))
    _timing_ref_out[:] = out
    info["output_bytes"] = _bytes(out)
    return info


def _factor(sample):
    """A scale in [0.5, 2) that differs for every sample index (golden-ratio sequence)."""
    return float(2.0 ** (((sample * 0.6180339887498949) % 1.0) * 2.0 - 1.0))


def refresh(which, sample):
    """Rewrites `which`'s working copy of set sample % K from its base; returns the set index."""
    k = sample % len(_timing_base)
    f = _factor(sample)
    for dst, src in zip(_timing_work[which][k], _timing_base[k]):
        if isinstance(src, torch.Tensor) and src.is_floating_point():
            torch.mul(src, f, out=dst)
    return k


def make_runner(which):
    """(prepare, run, capture, run_graph, drop) for one side: prepare(sample) refreshes and selects
    the set, run() calls the model on it; capture() records one forward per set in a CUDA graph
    ("" or why not), run_graph() replays the selected set's, drop() frees them."""
    model = _ref if which == "reference" else _cand
    sets = _timing_work[which]
    no_grad = torch.no_grad
    current = [0]

    def prepare(sample):
        current[0] = refresh(which, sample)

    def run():
        with no_grad():
            model(*sets[current[0]])

    def capture(stream_handle):
        # On kjudge's blocking stream (stream_handle): a launch on the legacy default stream
        # during capture then fails it instead of escaping the graph. One memory pool for the
        # side's graphs: they replay one at a time, and timing never reads their outputs. The
        # capture stream is warmed first (cuBLAS handles, lazy initialisation): a forward that
        # raises or faults there is that side's error, not a reason to skip graphs (except when
        # it runs out of memory, which the other side's captured graphs may have caused). The
        # warm-up call gets copies of set 0: a forward that skipped work on
        # buffers it has seen would otherwise capture less than it computes (the post-timing
        # check replays the graphs on fresh inputs and compares, too).
        side = torch.cuda.ExternalStream(stream_handle)
        side.wait_stream(torch.cuda.current_stream())
        try:
            with no_grad():
                with torch.cuda.stream(side):
                    model(*[_contiguous_clone(x) for x in sets[0]])
                side.synchronize()
        except torch.cuda.OutOfMemoryError as exc:
            # The other side's graphs may hold memory that its eager timing would not.
            return "out of memory in the warm-up before capture: %s" % _first_line(exc)
        made, outs = [], []
        # torch.cuda.graph's exit ends the capture before it restores the current stream, so a
        # capture that fails would leave kjudge's capture stream current: restored here.
        previous = torch.cuda.current_stream()
        pool = torch.cuda.graph_pool_handle()
        try:
            with no_grad():
                for k in range(len(sets)):
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, pool=pool, stream=side,
                                          capture_error_mode="thread_local"):
                        out = model(*sets[k])
                    made.append(g)
                    outs.append(out)
            torch.cuda.current_stream().wait_stream(side)
        except BaseException as exc:
            torch.cuda.set_stream(previous)
            why = "%s under CUDA graph capture: %s" % (type(exc).__name__, _first_line(exc))
            # Leaving a capture that already failed raises its own error ("operation failed due
            # to a previous error during capture"); the cause is the one it replaced.
            cause = exc.__context__
            if cause is not None and cause is not exc:
                why += " (after %s: %s)" % (type(cause).__name__, _first_line(cause))
        else:
            _timing_graphs[which] = (made, outs)
            return ""
        # Outside the except clause, so no traceback keeps this frame (and with it the failed
        # graph, whose destruction releases its pool if its capture ended) alive for the cycle
        # collector to free in the middle of a timed sample.
        cause = g = out = None
        made.clear()
        outs.clear()
        _reset_after_failed_capture(pool, side, which)
        return why
    def run_graph():
        _timing_graphs[which][0][current[0]].replay()

    def drop():
        _timing_graphs.pop(which, None)

    return prepare, run, capture, run_graph, drop


def _reset_after_failed_capture(pool, side, which):
    """Undoes what a capture that failed inside torch.cuda.graph leaves behind (checked on
    torch 2.11 with a forward that calls .item() under capture): the caching allocator still
    sends the capturing stream's allocations to the graph's pool, and the CUDA generator still
    counts offsets for a capture, so the next torch.randn on the device raises ("Offset
    increment outside graph capture"). The allocator's routing is ended and the pool released,
    only when it was still routed: a capture that ended cleanly stopped the routing, and the
    pool goes with its graph (capture() drops it first). One small capture that succeeds resets
    the generator. A reset that fails is the side's error: the worker's torch would not be
    trustworthy after it."""
    device = torch.cuda.current_device()
    end = getattr(torch._C, "_cuda_endAllocateToPool", None)
    release = getattr(torch._C, "_cuda_releasePool", None)
    if end is not None and release is not None:
        try:
            end(device, pool)
        except RuntimeError:
            pass  # not routed any more
        else:
            release(device, pool)
    try:
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side):
            g.capture_begin(capture_error_mode="thread_local")
            try:
                torch.empty(1, device=DEVICE).zero_()
            finally:
                g.capture_end()
        del g
        torch.cuda.synchronize()
    except BaseException as exc:
        name, error = _SIDES[which]
        raise error("after the %s's CUDA graph capture failed, PyTorch's CUDA state could not be "
                    "reset:\n%s" % (name, _format_exception(exc)))


def timing_native_inputs(k):
    """The candidate's working copy of set k (contiguous device tensors, refreshed in place).
    The tensors behind the views are made once per set and kept: a Python scalar becomes a 0-dim
    tensor that every call record of the set (and a graph captured from one) keeps pointing to."""
    if k not in _timing_native_in:
        _timing_native_in[k] = [_as_tensor_input(x) for x in _timing_work["candidate"][k]]
    return [_describe(t, "input%d" % j) for j, t in enumerate(_timing_native_in[k])]


def timing_native_outputs():
    if not _timing_native_outputs:
        _timing_native_outputs.extend(_poisoned_like(t) for t in _timing_ref_out)
    return [_describe(t, "output%d" % i) for i, t in enumerate(_timing_native_outputs)]


def timing_check_begin(sample):
    """Refreshes both sides' copies for `sample`; returns the set index. The reference's forward
    on its copy runs later (_timing_check_reference), after the candidate's, as in a trial."""
    k = refresh("reference", sample)
    refresh("candidate", sample)
    for t in _timing_native_outputs:  # a native candidate must write them again
        _poison(t)
    _trial.pop("timing_ref_out", None)
    _trial["timing_set"] = k
    return k


def _timing_check_reference():
    """The reference's forward on the copy timing_check_begin rewrote, once per check."""
    if "timing_ref_out" in _trial:
        return
    try:
        with torch.no_grad():
            out = _ref(*_timing_work["reference"][_trial["timing_set"]])
        _trial["timing_ref_out"] = _normalise(out, "Model.forward", ProblemError)
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("the reference failed on the timing check:\n%s" % _format_exception(exc))


def timing_check_candidate(k):
    try:
        with torch.no_grad():
            out = _cand(*_timing_work["candidate"][k])
        synchronize()
    except BaseException as exc:
        raise CandidateError("ModelNew.forward raised on the timing check:\n%s"
                             % _format_exception(exc))
    _trial["timing_cand_out"] = _normalise(out, "ModelNew.forward", CandidateError)


def _replay_timing_graph(which, k):
    """`which`'s graph of set k replayed on its current inputs: its outputs, as the timed replays
    produced them (normalised; a failure is that side's error)."""
    name, error = _SIDES[which]
    graphs, outs = _timing_graphs[which]
    try:
        graphs[k].replay()
        synchronize()
    except BaseException as exc:
        raise error("replaying %s's CUDA graph failed on the timing check:\n%s"
                    % (name, _format_exception(exc)))
    return _normalise(outs[k], name + ".forward (graph)", error)


def timing_check_candidate_graph(k):
    """The candidate's graph of set k replayed (on inputs timing_check_begin rewrote)."""
    _trial["timing_cand_out"] = _replay_timing_graph("candidate", k)


def timing_check_reference_graph(sample):
    """The reference's graph of the sample's set replayed on the same rewrite its eager forward
    had in timing_check_begin (rewritten again: the forward may have changed its inputs);
    timing_check_finish("reference_graph") compares the two. The eager outputs are copied first:
    one that is an input or a buffer of the model would otherwise be what the graph writes."""
    _timing_check_reference()
    _trial["timing_ref_out"] = [t.clone() for t in _trial["timing_ref_out"]]
    _trial["timing_ref_graph_out"] = _replay_timing_graph("reference",
                                                          refresh("reference", sample))


def timing_check_finish(source):
    """The reference's (eager) outputs of the check against `source`'s: "native" (the native
    candidate's output buffers), "candidate" (ModelNew's, by forward or graph replay) or
    "reference_graph" (the reference's own graph replay)."""
    _timing_check_reference()
    if source == "reference_graph":
        cand, error, whose = _trial["timing_ref_graph_out"], ProblemError, "the reference graph's"
    else:
        cand = _timing_native_outputs if source == "native" else _trial["timing_cand_out"]
        error, whose = CandidateError, "the candidate's"
    ref_host = _hosts(_trial["timing_ref_out"], ProblemError, "the reference's")
    cand_host = _hosts(cand, error, whose)
    _trial["host"] = (ref_host, cand_host)
    return {
        "reference": [_describe(t) for t in ref_host],
        "candidate": [_describe(t) for t in cand_host],
        "inputs_modified": [],
        "reference_ms": 0.0,
        "candidate_ms": 0.0,
    }
