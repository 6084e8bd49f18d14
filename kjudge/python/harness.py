"""kjudge's in-worker harness: the Python half of the bridge (kjudge/python/bridge.cpp).

It runs inside the worker's embedded interpreter, never in the orchestrator. It loads a
KernelBench-format problem and a candidate, builds both models under one seed, copies the
reference's weights into the candidate, draws trial inputs, runs each side on its own clone of the
inputs, and hands outputs to C++ as host tensors (the comparison and all timing happen in C++).

Exceptions: ProblemError (the reference side failed), CandidateError (ModelNew failed), EnvError
(torch or the device is unusable). bridge.cpp maps them onto kj::error kinds.
"""

import builtins
import copy
import gc
import hashlib
import importlib.util
import linecache
import math
import numbers
import os
import _random
import random
import resource
import signal
import _signal
import sys
import threading
import time
import traceback
import types
import warnings
import weakref

import torch

import _kjudge  # the embedded C++ module: popcorn_pri (shape jitter), see bridge.cpp

_active_threads = threading.active_count  # bound at load: a candidate cannot rebind it
_all_threads, _this_thread = threading.enumerate, threading.get_ident
_thread_name, _thread_ident, _thread_native_id = (threading.Thread.name.fget,
                                                  threading.Thread.ident.fget,
                                                  threading.Thread.native_id.fget)


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
# As timing_setup made them, per set and input ("base": each base's _layout; "reference",
# "candidate": _made() of each working copy): what refresh() checks against. Filled in place.
_timing_made = {}
# Per set, per input: _digest() of the pristine base as made: the post-timing check finds a base
# whose values were changed in place.
_timing_digest = []
_timing_native_outputs = {}  # set -> the native candidate's outputs of that set (poisoned)
_timing_native_params = {}  # set -> its copies of the reference's parameters and buffers
_timing_native_in = {}  # set -> the tensors the native candidate's views of that set point to
# Whether each set has its own parameters and outputs (a native candidate's), or all share set 0's
_timing_native_own = [True]
_timing_next = [0]  # one past the highest sample number refresh() was given since timing_setup
_runners = {}  # side -> make_runner's (prepare, run, ...), whose run() the timing check calls too
_run_outputs = {}  # side -> [what its run() returned last]
_NATIVE_PER_SET_BYTES = 32 << 20  # a native candidate's parameters and outputs, per set
_timing_ref_out = []  # the reference's outputs on timing set 0 (shapes for native outputs)
_timing_graphs = {}  # side -> (graphs per set, their static outputs), while captured
_SIDES = {"reference": ("Model", ProblemError), "candidate": ("ModelNew", CandidateError)}


def _first_line(exc, limit=300):
    """The first line of an exception's message (its type's name when it has none)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def _blamed_on_candidate(fn, what, limit=12):
    """fn(); a CandidateError it raises passes through, any other exception (SystemExit and
    KeyboardInterrupt included) becomes one, headed `what`, with its traceback's last `limit`
    entries."""
    try:
        return fn()
    except BaseException as exc:
        # Only the harness's own: a subclass the candidate made could carry a message that
        # cannot be read (its __str__ raising), which would make its error kjudge's.
        if type(exc) is CandidateError:
            raise
        raise CandidateError("%s:\n%s" % (what, _format_exception(exc, limit=limit)))


_MESSAGE_LIMIT = 16 << 20
# Bound before any candidate code runs (a candidate that replaced traceback.format_exception made
# every error it raised kjudge's own); its helpers could still be broken: _format_exception falls
# back to the type and message.
_format_traceback = traceback.format_exception


def _type_name(exc):
    """The exception type's name, as a plain str (a name the candidate set may be a str subclass
    whose own methods raise)."""
    try:
        return _plain_str(type.__getattribute__(type(exc), "__qualname__"))
    except BaseException:
        return "exception"


def _safe_str(exc):
    try:
        return _plain_str(str(exc))
    except BaseException:
        return "[its message could not be read]"


def _plain_str(text):
    """A copy of `text` (a str or a subclass) as a plain str, read without its own methods."""
    if type(text) is str:
        return text
    return str.__str__(text) if isinstance(text, str) else "[not text]"


def _format_exception(exc, limit=12):
    """The exception's traceback, each traceback in the chain cut to its last `limit` frames, and
    its message whole (a load_inline build failure carries the compiler's complete output in it),
    up to 16 MiB: beyond that the first characters are dropped, after a line saying how many."""
    try:
        text = "".join(_format_traceback(type(exc), exc, exc.__traceback__, limit=-limit))
    except BaseException as failed:  # traceback's helpers broken by the candidate, or __str__
        try:
            text = "%s: %s\n[kjudge: its traceback could not be formatted: %s]" % (
                _type_name(exc), _safe_str(exc), _type_name(failed))
        except BaseException:  # names or messages whose own str() raises
            text = "[kjudge: an exception whose type, message and traceback could not be read]"
    if len(text) > _MESSAGE_LIMIT:
        dropped = len(text) - _MESSAGE_LIMIT
        text = "[kjudge: the first %d characters were dropped]\n%s" % (dropped, text[dropped:])
    return text.rstrip("\n")


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
        # Every GPU's, as torch.manual_seed seeds them (kjudge's C++ seals the list's items
        # once this returns: harness_seal::pin_items).
        for g in torch.cuda.default_generators:
            if not any(g is mine for mine in _generators):
                _generators.append(g)
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

class FileChanged(Exception):
    """The file's bytes are not the ones kjudge hashed when the evaluation started."""


def _exec_file(path, module_name, sha256=""):
    """Executes a file as a fresh module with popcorn_pri already in its namespace, from its
    bytes as read here (compiled as importlib compiles a source file, PEP 263 and a BOM
    included), never from a __pycache__ file beside it: a candidate that wrote one there (or
    rewrote the file) changed what a later worker's problem ran, while the file's hash stayed.
    `sha256`, where given, is what those bytes must hash to (FileChanged otherwise)."""
    path = os.path.abspath(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s as a Python module" % path)
    with open(path, "rb") as f:
        data = f.read()
    if sha256:
        now = hashlib.sha256(data).hexdigest()
        if now != sha256:
            raise FileChanged("%s changed since kjudge read it when the evaluation started "
                              "(sha256 %s then, %s now)" % (path, sha256[:16], now[:16]))
    code = compile(data, path, "exec", dont_inherit=True)
    # Tracebacks, inspect.getsource (TorchScript, Triton) read the source through linecache,
    # which reads the file again: these bytes instead (an entry without a time is never
    # checked against the file).
    try:
        text = importlib.util.decode_source(data)
        linecache.cache[path] = (len(data), None, text.splitlines(True), path)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        pass  # compile() took it; the lines are only for reading
    module = importlib.util.module_from_spec(spec)
    module.__dict__["popcorn_pri"] = _kjudge.popcorn_pri
    folder = os.path.dirname(path)
    if folder not in sys.path:
        # Appended, not prepended: a candidate named triton.py must not shadow the real package.
        sys.path.append(folder)
    sys.modules[module_name] = module
    exec(code, module.__dict__)
    return module


def load_problem(path, sha256=""):
    global _problem
    try:
        module = _exec_file(path, "kjudge_problem", sha256)
    except FileChanged as exc:
        raise ProblemError("problem file %s" % exc)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit in module code ...
        raise ProblemError("problem file %s failed to load:\n%s" % (path, _format_exception(exc)))
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError("problem file %s does not define %s (KernelBench format needs Model, "
                           "get_inputs and get_init_inputs)" % (path, ", ".join(missing)))
    _problem = module
    _kjudge.popcorn_pri.seal(1)  # sizes drawn at the problem's import: pinned from now on
    _bind_numpy_seed()


def tolerance():
    """Per-problem tolerance override: module constants KJUDGE_ATOL / KJUDGE_RTOL, each a real
    number in [0, 1e30], as --atol and --rtol are: a Python or NumPy number or a one-element
    tensor of one (anything else is the problem's error, named)."""
    out = {}
    for key, name in (("atol", "KJUDGE_ATOL"), ("rtol", "KJUDGE_RTOL")):
        if hasattr(_problem, name):
            value = getattr(_problem, name)
            # A number, not what float() also takes: a string ("0.5") or a bool (True: 1.0).
            number, what = math.nan, "a real number, not %s" % _a(type(value).__name__)
            if isinstance(value, torch.Tensor) and value.numel() == 1 and not (
                    value.dtype == torch.bool or value.is_complex()):
                value = value.item()
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                what = "a finite number in [0, 1e30]"
                try:
                    number = float(value)
                except OverflowError:
                    pass
            if not (0 <= number <= 1e30):
                raise ProblemError("%s = %r: a tolerance must be %s" % (name, value, what))
            out[key] = number
    return out


def _start_cpu_threads():
    """Starts torch's CPU worker threads, all of them, now. A thread starts with the FPU state of
    the thread that starts it, and torch.set_flush_denormal changes only the calling thread's:
    a pool first started by a candidate's parallel op (at its import, say) after it set the flag
    would flush subnormals in the reference's parallel ops too, out of kjudge's reach. Started
    here, under the problem's state, the pool keeps it. (Threads a candidate adds by raising the
    thread count start under its own state: not covered.)"""
    n = torch.get_num_threads()
    if n > 1:
        # 65,536 elements a thread: above torch's grain size. On the CPU whatever default device
        # the problem set.
        torch.ones(n * 65536, device="cpu", dtype=torch.float32).mul_(1.0)


# The process's resource limits before the candidate's code first ran: one that lowers them (the
# memory a trial's inputs may take) would make the reference's part of a trial fail, the problem
# then blamed. Checked before every trial's draws (_check_limits).
_LIMIT_NAMES = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_RSS", "RLIMIT_STACK", "RLIMIT_NOFILE",
                "RLIMIT_MEMLOCK", "RLIMIT_FSIZE")
_limits_before = {}


def _current_limits():
    out = {}
    for name in _LIMIT_NAMES:
        if hasattr(resource, name):
            try:
                out[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    return out


def _check_limits():
    """Raises where the candidate lowered a limit (soft or hard). A raised one is harmless, and
    libraries raise the open-files limit at import."""
    if not _limits_before:
        return

    def lower(now, before):
        as_num = lambda v: float("inf") if v == resource.RLIM_INFINITY else v
        return as_num(now) < as_num(before)

    changed = [n for n, v in _current_limits().items()
               if n in _limits_before and any(lower(a, b) for a, b in zip(v, _limits_before[n]))]
    if changed:
        raise CandidateError("the candidate lowered the process's resource limits (%s): the "
                             "trials' inputs and the reference would run under its limits"
                             % ", ".join(changed))


def _start_libraries():
    """Has the CPU libraries under torch's calls read the environment now, under the problem's
    state, before any code of the candidate's runs: MKL fixes its code path (MKL_CBWR) at its
    first call, oneDNN its instruction set (ONEDNN_MAX_CPU_ISA) at its first primitive. A
    candidate that set MKL_CBWR=COMPATIBLE at import, before the reference's first matmul, had
    MKL run all of them on its slow code path while it did the same work through oneDNN (6.9x
    on the CPU); ONEDNN_MAX_CPU_ISA=SSE41 slowed a convolution 2.5x. The environment itself is
    kept to the candidate's calls as any setting (_settings_table); this covers what these
    libraries read once, at a first use the candidate's own calls could otherwise make. Not
    GPU libraries: GPU work here would be the candidate's import's to the worker's watch (and
    take the GPU's lock early). Explicit dtypes and device: the problem may have set other
    defaults."""
    f32 = torch.float32
    one = torch.ones(8, 8, dtype=f32, device="cpu")
    torch.mm(one, one)  # MKL's sgemm
    # A 4x4 filter: torch hands it to oneDNN, whose first primitive reads its settings.
    torch.nn.functional.conv2d(torch.ones(1, 8, 8, 8, dtype=f32, device="cpu"),
                               torch.ones(8, 8, 4, 4, dtype=f32, device="cpu"))


def load_candidate(path):
    global _candidate
    start = time.perf_counter()
    _limits_before.update(_current_limits())
    _reach.arm()
    _start_cpu_threads()
    _start_libraries()
    _note_own_threads()
    module = _blamed_on_candidate(
        lambda: _as_candidate(lambda: _exec_file(path, "kjudge_candidate")),
        "candidate %s failed to build or import" % path, limit=400)
    if not hasattr(module, "ModelNew"):
        raise CandidateError("candidate %s does not define ModelNew" % path)
    _candidate = module
    return time.perf_counter() - start


# --- models -------------------------------------------------------------------------------------

def _to_device(x):
    """x with its tensors (also inside lists, tuples, their subclasses and namedtuples) on
    kjudge's device; a subclass that cannot be rebuilt from its items stays as it is."""
    if isinstance(x, torch.Tensor):
        return x.to(DEVICE)
    if not isinstance(x, (list, tuple)):
        return x
    items = [_to_device(v) for v in x]
    try:
        if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple: fields by position
            return type(x)(*items)
        return type(x)(items)
    except Exception:
        return x


def _plain(x):
    """A forward input that is a subclass of torch.Tensor (an nn.Parameter, say) as a plain
    tensor on the same storage, keeping requires_grad: kjudge's copies, comparisons and timing
    inputs are plain tensors."""
    if not isinstance(x, torch.Tensor) or type(x) is torch.Tensor:
        return x
    plain = x.detach().as_subclass(torch.Tensor)
    if x.requires_grad:
        plain.requires_grad_(True)
    return plain


_SEED_MASK = (1 << 64) - 1


def _deep_copy(x):
    """A deep copy of constructor arguments, or x itself where something in it cannot be copied
    (a handle, a module object): then both models share those objects, as in KernelBench."""
    try:
        return copy.deepcopy(x)
    except Exception:
        return x


# The seeding functions as bound before any candidate code ran (torch imports numpy): the
# timing's prepare() seeds a side's sample while the other side's bindings may be in force, and
# a candidate's rebinding of random.seed or numpy.random.seed would run its code there.
# Python's generator seeded through its C method, as random.seed does it for an int, and its
# cached Gaussian cleared in its instance's dict (random.seed's Python code, whose __code__ a
# candidate can replace, and a __setattr__ of its class would run in every sample's setup).
_random_inst = random._inst
_random_c_seed = _random.Random.seed
_random_dict = vars(random._inst)
_numpy_seed = None


def _bind_numpy_seed():
    """numpy.random.seed, where numpy was imported already (by torch, here) or first by the
    problem (before any candidate code): bound then, or never (a numpy the candidate imports
    first is its own)."""
    global _numpy_seed
    if _numpy_seed is None:
        _numpy_seed = getattr(getattr(sys.modules.get("numpy"), "random", None), "seed", None)


_bind_numpy_seed()


def _seed_python(seed):
    """Python's and NumPy's generators, for code that draws with them (get_inputs(), a forward):
    `seed` already within _SEED_MASK."""
    _random_c_seed(_random_inst, seed)
    _random_dict["gauss_next"] = None
    if _numpy_seed is not None:
        _numpy_seed(seed % (1 << 32))


def _non_persistent_buffers(model):
    """The buffers a model's state_dict leaves out (registered with persistent=False), by name in
    named_buffers order: they hold values the forward uses as much as persistent ones do."""
    kept = model.state_dict(keep_vars=False)
    return {name: buf.detach() for name, buf in model.named_buffers()
            if buf is not None and not _uninitialized(buf) and name not in kept}


# The dtypes kjudge passes to a native candidate (kjudge/core/dtype.hpp).
_ABI_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
               torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool)


def _state_tensors(model):
    """The model's state_dict without what is no tensor (the value a module's get_extra_state()
    returns, kept under "<prefix>_extra_state": kjudge copies and passes tensors only)."""
    return {k: v for k, v in model.state_dict().items() if isinstance(v, torch.Tensor)}


def _uninitialized(t):
    """A lazy module's parameter before its first forward (no shape, no values)."""
    return isinstance(t, torch.nn.parameter.UninitializedTensorMixin)


def _tensor_key(t):
    """What makes two state_dict entries one tensor (a tied weight under two names); a tensor
    without strided storage (sparse) is only itself."""
    try:
        return (t.device, t.dtype, t.data_ptr(), tuple(t.shape), tuple(t.stride()))
    except (RuntimeError, NotImplementedError):
        return ("object", id(t))


def _distinct(entries):
    """A state_dict-like mapping's tensors once each, with their names: [(names, tensor)] in the
    order of their first names. Tied tensors (one tensor under several names: a language
    model's embedding and output head) are one entry; empty tensors, which share no storage,
    stay apart."""
    out, at = [], {}
    for name, t in entries.items():
        key = _tensor_key(t) if t.numel() > 0 else None
        if key is not None and key in at:
            out[at[key]][0].append(name)
            continue
        if key is not None:
            at[key] = len(out)
        out.append(([name], t))
    return out


def _copy_weights(ref, cand, changed):
    """Copies the reference's state_dict into the candidate (docs/methodology.md, "Weights",
    which gives each step's reasons); each candidate tensor whose values the copy changed goes
    into the list `changed` (_put). First each of the reference's non-persistent buffers goes
    into the candidate's buffer of that name and shape, where it has one (no condition of the
    match: a candidate may compute such a value itself). A candidate's lazy tensors are given
    their shapes (_materialize_lazy). Then each reference tensor (tied ones once) takes, in turn:
    - by name: its namesake of the same shape (any of its names; among the candidate's
      state_dict and its non-persistent buffers), into every such namesake;
    - then by value: the candidate's floating-point tensor whose values, as the seed built them,
      equal it (or its transpose, kept as built: a weight stored as W^T; or it in a shape with
      dimensions of size 1 added or left out), where that pairing is one to one;
    - then a 2-D tensor's namesake of the transposed shape, the one of its kind (a weight kept
      as W^T with the candidate's own values; "by_name_end"), which takes its transpose;
    - then by the end of a name ("by_name_end", _pair_by_name_end): a candidate tensor of the
      same shape, or of the same one but for dimensions of size 1, whose name ends as the
      reference tensor's does (names split at dots and underscores, last parts read through
      _LAST_NAME_SYNONYMS), where each is the other's one best match; a 2-D tensor that a
      transposed-shape tensor's name matches as well is left to the next steps;
    - then by its siblings' module ("by_name_end", _pair_by_siblings): the tensor of the same
      last name in the candidate module that the pairs so far tie its module to, one to one;
    - then module by module ("by_order", _match_modules; the reference's buffers among its
      tensors): the reference's modules take the candidate's whose tensors have the same last
      names and shapes, in order, tensor by last name, for each such kind of module that has as
      many on both sides (a renamed LayerNorm that declares its bias first);
    - then, all or nothing, by order and shape (_match_floats): each remaining floating-point
      reference tensor takes the next remaining candidate tensor of the same shape; where that
      fails (a candidate that declares its bias before its weight), by shape where every shape
      is one tensor's on both sides; where that fails, in order within each shape, size-1
      dimensions aside, where each shape has as many tensors on both sides (_match_per_shape);
      where that fails, so with a 2-D tensor's two dimensions in either order, then so as
      matrices (_as_matrix: a weight kept as W^T, or a convolution's as an im2col matrix, with
      the candidate's own values). Each is tried with the reference's buffers and, where that
      fails, without them: a buffer the candidate has no counterpart for (BatchNorm's running
      statistics, for a candidate that keeps none) is left out, as an integer entry is. Where
      all fail and the candidate's state_dict keeps no floating-point tensor left unpaired, they
      are tried again with the candidate's non-persistent floating-point buffers (weights kept
      as persistent=False buffers under other names; not those that took a reference's buffer
      by name).
    Integer and bool entries without a pair from the steps by name (the transposed namesake's
    and the siblings' included) take the next unused candidate entry of the same shape and
    dtype. Where the floating-point parameters cannot all be paired, the pairs found before the
    all-or-nothing steps are copied and the rest keep the values the seed gave the candidate
    ("partial"; "seed_only" where there were none). Returns (the least certain method that any
    pair needed: "by_name", "by_value" (nothing needed copying: the seed built the same values),
    "by_name_end", "by_order", "by_shape"; "partial", "seed_only"; "none" for a reference
    without a state_dict, or with buffers alone of which the candidate keeps none; the names of
    the reference's parameters left unpaired)."""
    given = set()  # the candidate's buffers that took a non-persistent buffer's value by name
    with _NoGrad():
        cand_buffers = dict(cand.named_buffers())
        for name, buf in _non_persistent_buffers(ref).items():
            mine = cand_buffers.get(name)
            if (mine is not None and not _uninitialized(mine) and mine.shape == buf.shape
                    and mine.layout == torch.strided and buf.layout == torch.strided):
                _put(mine, buf, changed)
                given.add(_tensor_key(mine))
    rs = _state_tensors(ref)
    if not rs:
        return "none", []
    _materialize_lazy(cand, ref, rs)
    cand_state = _state_tensors(cand)
    cs, unwritable = {}, {}
    for k, v in cand_state.items():
        if _uninitialized(v):
            continue
        # Another layout (oneDNN's blocked weights of torch.utils.mkldnn, a sparse tensor) has
        # no strided values to write or compare: an honest candidate that converted its layers
        # failed in the copy ("copy_mkldnn_ ... not implemented"), blamed on it.
        (cs if v.layout == torch.strided else unwritable)[k] = v
    named = dict(cs)  # what a reference name may find
    for name, buf in _non_persistent_buffers(cand).items():
        if buf.layout == torch.strided:
            named.setdefault(name, buf)
    groups = _distinct(rs)
    parameter_keys = {_tensor_key(p) for p in ref.parameters() if p.numel() > 0}
    with _NoGrad():
        pairs, methods, used = [], set(), set()

        cand_name = {}  # tensor key -> its first name among the candidate's
        for name, t in named.items():
            cand_name.setdefault(_tensor_key(t), name)
        ref_name = {id(v): names[0] for names, v in groups}
        links = []  # (reference module, candidate module) of each pair made, for _pair_by_siblings

        def take(dst, src, how, ref=None):
            pairs.append((dst, src))
            methods.add(how)
            used.add(_tensor_key(dst))
            link(dst, src if ref is None else ref)

        def link(dst, ref):
            if id(ref) in ref_name and _tensor_key(dst) in cand_name:
                links.append((ref_name[id(ref)].rpartition(".")[0],
                              cand_name[_tensor_key(dst)].rpartition(".")[0]))

        def copy(method, unpaired=()):
            for dst, src in pairs:
                _put(dst, src, changed)
            return method, list(unpaired)

        # By name, into every same-shaped namesake (a candidate may keep tied copies apart).
        # A namesake in another layout is not written: it stands where its values, made dense,
        # are the reference's already (the seed built both so), as a pairing by value.
        rest = []
        for names, v in groups:
            mine = [named[n] for n in names if n in named and named[n].shape == v.shape
                    and _tensor_key(named[n]) not in used]
            for t in mine:
                take(t, v, "by_name")
            if not mine and any(_same_dense(unwritable.get(n), v) for n in names):
                methods.add("by_value")
                continue
            if not mine:
                rest.append((names, v))
        if not rest:
            return copy("by_name")
        own = [v for _, v in _distinct(cs) if _tensor_key(v) not in used]  # each tensor once
        floats = [v for v in own if v.is_floating_point()]
        ref_floats = [v for _, v in rest if v.is_floating_point()]
        kept = _match_values(ref_floats, floats)
        for c, v, transposed in kept:
            used.add(_tensor_key(c))
            methods.add("by_value")
            link(c, v)
            if not transposed:
                pairs.append((c, _shaped_as(v, c)))
        pinned = {id(v) for _, v, _ in kept}
        # A namesake of the transposed shape: a 2-D weight kept as W^T with the candidate's own
        # values, under the reference's name (by order, a ModuleList of such layers had the
        # second layer's W^T, of the first's shape, take the first's weight).
        for names, v in rest:
            if id(v) in pinned or not _two_dims_apart(v):
                continue
            mine = [named[n] for n in names if n in named and _tensor_key(named[n]) not in used
                    and _squeezed(named[n]) == _squeezed(v)[::-1]
                    and named[n].is_floating_point() == v.is_floating_point()]
            if len(mine) == 1:
                take(mine[0], _shaped_as(v, mine[0]), "by_name_end", v)
                pinned.add(id(v))
        # By the end of a name, among the tensors still unpaired: the same name in a shape that
        # differs by dimensions of size 1, or names that end alike (`weight` for `ln.weight`,
        # `fc.bias` for `gemm.bias`), where each of the two is the other's one best match.
        for dst, v in _pair_by_name_end([(names, v) for names, v in rest if id(v) not in pinned],
                                        {n: t for n, t in named.items()
                                         if _tensor_key(t) not in used}):
            take(dst, _shaped_as(v, dst), "by_name_end", v)
            pinned.add(id(v))
        # By the module the tensor's siblings were paired with: `proj.bias` goes to `wo.bias`
        # where `proj.weight` went to `wo.weight` (a block that declares its MLP first had its
        # biases of one shape swapped by order).
        for dst, v in _pair_by_siblings([(names, v) for names, v in rest if id(v) not in pinned],
                                        {n: t for n, t in named.items()
                                         if _tensor_key(t) not in used}, links,
                                        rs, cand_state):
            take(dst, _shaped_as(v, dst), "by_name_end", v)
            pinned.add(id(v))
        ref_floats = [v for v in ref_floats if id(v) not in pinned]
        floats = [c for c in floats if _tensor_key(c) not in used]
        # Module by module, where the modules of a kind agree in number (the reference's buffers
        # among its tensors): the rest are left to the order.
        for dst, v in _match_modules(ref_floats, floats, lambda v: ref_name[id(v)],
                                     lambda c: cand_name[_tensor_key(c)]):
            take(dst, _shaped_as(v, dst), "by_order")
            pinned.add(id(v))
        ref_floats = [v for v in ref_floats if id(v) not in pinned]
        floats = [c for c in floats if _tensor_key(c) not in used]
        ref_parameters = [v for v in ref_floats if _tensor_key(v) in parameter_keys]
        # The candidate's non-persistent floating-point buffers under other names, tried where
        # its state_dict keeps no floating-point tensor left unpaired (a LayerNorm's weight and
        # bias kept as persistent=False buffers were left to the seed), but for those that took
        # a reference's buffer by name: a constant of the candidate's own (a mask it computed),
        # or one of those, took a parameter of its shape, and an honest candidate failed.
        in_state = {_tensor_key(v) for v in cs.values()}
        spare = [] if floats else [
            t for t in named.values() if t.is_floating_point() and _tensor_key(t) not in in_state
            and _tensor_key(t) not in used and _tensor_key(t) not in given]
        matched = None
        for pool in ((floats, floats + spare) if spare else (floats,)):
            # Each step with the reference's buffers, then without them.
            steps = [(order, match, wanted) for order, match in (
                         ("by_order", lambda r: _match_floats(r, pool, in_order=True)),
                         ("by_shape", lambda r: _match_floats(r, pool, in_order=False)),
                         ("by_order", lambda r: _match_per_shape(r, pool, _PER_SHAPE_KEYS)),
                         ("by_order", lambda r: _match_per_shape(
                             r, pool, (_unordered_2d_exact, _as_matrix), _one_a_matrix)))
                     for wanted in (ref_floats, ref_parameters)]
            for order, match, wanted in steps:
                matched = match(wanted)
                if matched is not None:
                    break
            if matched is not None:
                break
        if matched is None:
            unpaired = [names[0] for names, v in rest
                        if v.is_floating_point() and _tensor_key(v) in parameter_keys
                        and id(v) not in pinned]
            return copy("partial" if pairs else "seed_only", unpaired)
        for dst, src in matched:
            take(dst, _shaped_as(src, dst), order)
        others = [v for v in own if not v.is_floating_point()]

        def fits(c, v):
            return (c is not None and _tensor_key(c) not in used and c.shape == v.shape
                    and c.dtype == v.dtype)

        for _, v in rest:  # no namesake of their shape (the first passes took those)
            if v.is_floating_point() or id(v) in pinned:
                continue
            mine = next((c for c in others if fits(c, v)), None)
            if mine is not None:
                take(mine, v, "by_order")
        if not pairs and not methods:
            # No parameter to pair, and the candidate keeps none of the reference's buffers:
            # nothing copied (it read by_name).
            return copy("none")
        return copy(next((how for how in ("by_shape", "by_order", "by_name_end", "by_value")
                          if how in methods), "by_name"))


def _squeezed(t):
    """t's shape without its dimensions of size 1: a candidate tensor can take a reference
    tensor's values by the end of its name where theirs agree (an RMSNorm weight kept as
    (1, 1, hidden) to broadcast, for the reference's (hidden,): it was left unpaired, and its
    ones read incorrect)."""
    return tuple(d for d in t.shape if d != 1)


def _unordered_2d_exact(t):
    """t's shape, its two dimensions sorted where it has two (size-1 dimensions kept: a (1, D)
    scale and a (D,) bias are apart, where _as_matrix puts them in one bucket)."""
    return tuple(sorted(t.shape)) if t.dim() == 2 else tuple(t.shape)


def _as_matrix(t):
    """t's _squeezed() shape as a matrix, its first dimension by the product of the others, the
    two sorted: in the last step of _copy_weights, a 2-D weight kept as W^T, (in, out), with the
    candidate's own initialisation (so not paired by value) and the reference's (out, in) are one
    bucket, and so are a convolution's weight kept as the GEMM matrix of an im2col, (C_out,
    C_in kh kw) or its transpose, and the reference's (C_out, C_in, kh, kw) (both kept the
    candidate's own values before)."""
    s = _squeezed(t)
    return tuple(sorted(_rows(s))) if len(s) >= 2 else s


def _two_dims_apart(t):
    """Whether t's _squeezed() shape is two different sizes: its transpose has another shape."""
    s = _squeezed(t)
    return len(s) == 2 and s[0] != s[1]


def _rows(shape):
    """A shape as a matrix: its first dimension by the product of the others."""
    rest = 1
    for d in shape[1:]:
        rest *= d
    return (shape[0], rest)


def _shaped_as(v, t):
    """v in t's shape (the callers pair only such tensors): reshaped where their _squeezed()
    shapes agree, or where they agree as matrices (_rows: an im2col's (C_out, C_in kh kw) for a
    convolution's (C_out, C_in, kh, kw), either way); else (a 2-D tensor's two dimensions, or
    such a matrix's, in the other order) transposed as a matrix."""
    if v.shape == t.shape:
        return v
    s, mine = _squeezed(v), _squeezed(t)
    if mine == s or len(s) < 2 or len(mine) < 2 or v.numel() == 0 or _rows(mine) == _rows(s):
        return v.reshape(t.shape)
    return v.reshape(_rows(s)).t().reshape(t.shape)


# Last names that mean `weight` or `bias` (a LayerNorm's `gamma` and `beta`, a flat `ln1_w`).
_LAST_NAME_SYNONYMS = {"gamma": "weight", "g": "weight", "w": "weight", "beta": "bias",
                       "b": "bias"}


def _meaning(last):
    """What a last name means (_LAST_NAME_SYNONYMS; itself where it is none of them)."""
    return _LAST_NAME_SYNONYMS.get(last.lower(), last)


def _by_module(named):
    """{module: {last name: value}} of a (name -> value) mapping's entries, a module being a
    name but for its last part, in the order of their first entries."""
    out = {}
    for name, value in named:
        module, _, last = name.rpartition(".")
        out.setdefault(module, {})[last] = value
    return out


def _name_parts(name, synonyms=True):
    """A state_dict name's parts, split at dots and underscores, its last part read through
    _LAST_NAME_SYNONYMS: a candidate's flat `ln_weight` for the reference's `ln.weight` (an
    honest LayerNorm that declared `ln_bias` first had the two swapped by order, and failed), and
    `ln.gamma` and `ln.beta`, declared beta first, for `ln.weight` and `ln.bias` (swapped so
    too)."""
    parts = name.replace("_", ".").split(".")
    if synonyms:
        parts[-1] = _meaning(parts[-1])
    return parts


def _plain_names(names):
    """The names among `names` whose last part is to be read as written, not through
    _LAST_NAME_SYNONYMS: those of a module (a name but for its last part, split at dots and
    underscores) in which another name ends in another word of the same meaning (a root's
    `gamma` beside its `weight`: read as one, they tied, and the order swapped them)."""
    words = {}  # (module, meaning) -> the words of that meaning in the module
    parts = []
    for name in names:
        module, _, last = name.replace("_", ".").rpartition(".")
        key = (module, _meaning(last))
        words.setdefault(key, set()).add(last)
        parts.append((name, key))
    return {name for name, key in parts if len(words[key]) > 1}


def _common_end(a, b, plain=frozenset()):
    """How many parts (_name_parts) two state_dict names share at their ends, up to an index
    (`fc.bias` and `gemm.bias`: 1; `weight` and `ln.weight`: 1; `x.ln.weight` and
    `y.ln.weight`: 2; `ln_weight` and `ln.weight`: 2; `net.2.weight` and `layers.2.weight`: 1,
    since a Sequential's index 2 is its second Linear where a ReLU sits between, and a
    ModuleList's its third: counted, they paired different layers, and honest candidates
    failed). The same name counts all its parts. Last parts are read through
    _LAST_NAME_SYNONYMS but where either name is in `plain` (_plain_names)."""
    synonyms = a not in plain and b not in plain
    pa, pb = _name_parts(a, synonyms), _name_parts(b, synonyms)
    if pa == pb:
        return len(pa)
    n = 0
    while (n < len(pa) and n < len(pb) and pa[-1 - n] == pb[-1 - n]
           and not pa[-1 - n].isdigit()):
        n += 1
    return n


def _pair_by_name_end(rest, mine):
    """(candidate tensor, reference tensor) pairs between the reference tensors of `rest`
    ((names, tensor) pairs) and the candidate tensors of `mine` (name -> tensor) of the same
    _squeezed() shape whose names end alike (_common_end, over any of their names), where each
    is the other's one best match: a reference `bias` and `gemm.bias` of one shape both match a
    candidate's `fc.bias` by one part, which is then paired with neither (it went to `bias`
    when a name had only to end in the other, and an honest candidate failed). Only tensors of
    one such shape are compared (a model of hundreds of tensors of one shape: a pass over every
    pair took seconds)."""
    buckets = {}  # squeezed shape -> candidate tensor key -> (tensor, its names)
    for n, t in mine.items():
        buckets.setdefault(_squeezed(t), {}).setdefault(_tensor_key(t), (t, []))[1].append(n)
    plain = _plain_names([n for names, _ in rest for n in names]) | _plain_names(mine)

    def ends_alike(names, v, bucket):  # (candidate key, tensor, common parts) where they do
        for key, (t, cand_names) in buckets.get(bucket, {}).items():
            if t.is_floating_point() == v.is_floating_point():
                common = max(_common_end(n, r, plain) for n in cand_names for r in names)
                if common > 0:
                    yield key, t, common

    score, cand_of = {}, {}
    for i, (names, v) in enumerate(rest):
        # A 2-D tensor whose name ends as that of a candidate tensor of the transposed shape, by
        # as many parts as any of its own shape's, is left to its siblings (a layer that keeps
        # W^T, (in, out), has the shape of the next layer's W, (out, in), where in and out
        # alternate: an MLP's first weight went to the second layer's W^T).
        along = list(ends_alike(names, v, _squeezed(v)))
        if _two_dims_apart(v):
            across = max((c for _, _, c in ends_alike(names, v, _squeezed(v)[::-1])), default=0)
            if across and across >= max((c for _, _, c in along), default=0):
                continue
        for key, t, common in along:
            score[(i, key)] = common
            cand_of[key] = t
    best = ({}, {})  # per reference index, per candidate key: (top score, the pairs at it)
    for pair, common in score.items():
        for side in (0, 1):
            top, at = best[side].get(pair[side], (0, []))
            if common > top:
                best[side][pair[side]] = (common, [pair])
            elif common == top:
                at.append(pair)
    return [(cand_of[key], rest[i][1]) for i, key in sorted(score, key=lambda pair: pair[0])
            if best[0][i][1] == [(i, key)] and best[1][key][1] == [(i, key)]]


def _by_meaning(leaves):
    """A module's {last name: tensor} keyed by what the names mean (_LAST_NAME_SYNONYMS:
    `gamma` as `weight`), where no two of them mean the same; else as given."""
    meant = {_meaning(last): t for last, t in leaves.items()}
    return meant if len(meant) == len(leaves) else leaves


def _pair_by_siblings(rest, mine, links, ref_state, cand_state):
    """(candidate tensor, reference tensor) pairs between the reference tensors of `rest`
    ((names, tensor) pairs) and the candidate tensors of `mine` (name -> tensor): a reference
    tensor whose module (its name but for the last part) the pairs made so far (`links`:
    (reference module, candidate module) pairs) tie to one candidate module, and to none other,
    that is tied to no other reference module and holds as many entries of the state_dicts
    (`ref_state`, `cand_state`; a candidate that keeps all its tensors flat at its root is no
    counterpart of the reference's `fc`, and `fc.bias` took the root's `bias` meant for a
    LayerNorm), takes that module's tensor of the same last name (read through
    _LAST_NAME_SYNONYMS, on either side where its module has no two of one meaning:
    _by_meaning), of the same _squeezed() shape or, 2-D, of the transposed one, and of the same
    kind (floating-point or not)."""
    ref_modules, cand_modules_of = _by_module(ref_state.items()), _by_module(cand_state.items())
    # A reference name -> what its last part means, read as _by_meaning reads its module's names.
    meaning_of = {}
    for module, leaves in ref_modules.items():
        for meaning, last in _by_meaning({last: last for last in leaves}).items():
            meaning_of["%s.%s" % (module, last) if module else last] = meaning
    cand_meant = {module: _by_meaning(leaves)
                  for module, leaves in _by_module(mine.items()).items()}
    forward, backward = {}, {}
    for ref_module, cand_module in links:
        forward.setdefault(ref_module, set()).add(cand_module)
        backward.setdefault(cand_module, set()).add(ref_module)
    found, taken = [], set()
    for names, v in rest:
        module, _, last = names[0].rpartition(".")
        cand_modules = forward.get(module, set())
        if len(cand_modules) != 1:
            continue
        (cand_module,) = cand_modules
        if backward[cand_module] != {module} or len(ref_modules.get(module, ())) != len(
                cand_modules_of.get(cand_module, ())):
            continue
        t = cand_meant.get(cand_module, {}).get(meaning_of.get(names[0], last))
        if (t is None or _tensor_key(t) in taken
                or t.is_floating_point() != v.is_floating_point()
                or _squeezed(t) != _squeezed(v) and not (
                    _two_dims_apart(v) and _squeezed(t) == _squeezed(v)[::-1])):
            continue
        taken.add(_tensor_key(t))
        found.append((t, v))
    return found


def _same_dense(t, v):
    """Whether t, a tensor in another layout than strided (or None), holds v's values."""
    if t is None or t.dtype != v.dtype or t.device != v.device:
        return False
    try:
        dense = t.to_dense()
    except (RuntimeError, NotImplementedError):
        return False
    return dense.shape == v.shape and torch.equal(dense, v)


def _materialize_lazy(cand, ref, rs):
    """Gives each of the candidate's lazy parameters and buffers (nn.LazyLinear's, before a
    first forward) that has a namesake among the reference's tensors `rs` that namesake's shape,
    as torch's load_state_dict does, so that the copy by name writes it: left lazy, an nn.MLP of
    LazyLinear layers named as the reference's kept values of its own (weights_not_copied).
    A lazy module left so, under another name, takes the shapes of the reference module `ref`
    holds of the class it becomes (its cls_to_become) whose settings agree with those it knows
    (a LazyLinear knows its out_features, not its in_features), where that pairing is one to
    one: a LazyLinear named `fc` for the reference's `linear` kept values of its own."""
    with _NoGrad():
        for module_name, module in cand.named_modules():
            for store in (module._parameters, module._buffers):
                for name, t in list(store.items()):
                    full = "%s.%s" % (module_name, name) if module_name else name
                    v = rs.get(full)
                    if (t is not None and _uninitialized(t) and v is not None
                            and not _uninitialized(v)):
                        t.materialize(v.shape)
        lazy = [m for _, m in cand.named_modules() if _lazy_tensors(m)]
        if not lazy:
            return
        cand_names = {name for name, _ in cand.named_modules()}
        mine = [m for name, m in ref.named_modules() if name not in cand_names]
        fits = {id(m): [r for r in mine if _becomes(m, r)] for m in lazy}
        for m in lazy:
            if len(fits[id(m)]) != 1:
                continue
            r = fits[id(m)][0]
            if sum(r in fits[id(o)] for o in lazy) != 1:
                continue
            for store, theirs in ((m._parameters, r._parameters), (m._buffers, r._buffers)):
                for name, t in _lazy_tensors(m, store):
                    v = theirs.get(name)
                    if v is not None and not _uninitialized(v):
                        t.materialize(v.shape)


# A lazy module's settings that its first input decides (0 until then).
_LAZY_UNKNOWN = ("in_features", "in_channels", "num_features")


def _lazy_tensors(module, store=None):
    """[(name, tensor)]: the module's own lazy parameters and buffers (of `store` alone if
    given)."""
    stores = (module._parameters, module._buffers) if store is None else (store,)
    return [(name, t) for st in stores for name, t in st.items()
            if t is not None and _uninitialized(t)]


def _becomes(lazy, r):
    """Whether the reference module r is of the class the lazy module becomes, with each of its
    settings (its class's __constants__) equal to the lazy module's, but those the lazy module
    does not know yet (_LAZY_UNKNOWN, 0)."""
    if getattr(lazy, "cls_to_become", None) is None or type(r) is not lazy.cls_to_become:
        return False
    for setting in getattr(r, "__constants__", ()):
        known = getattr(lazy, setting, None)
        if setting in _LAZY_UNKNOWN and known == 0:
            continue
        if known != getattr(r, setting, None):
            return False
    return True


def _match_values(ref, floats):
    """[(candidate, reference, transposed)]: the candidate tensors among `floats` whose values
    equal one reference tensor of `ref` exactly (transposed: equal to its transpose, a 2-D weight
    kept as W^T; or in a shape with dimensions of size 1 added or left out, a conv bias kept as
    (1, C, 1, 1)), where the pairing is one to one both ways. Under one seed, a candidate that
    builds a tensor as the reference does gets the same values; a tensor equal to several (ones,
    zeros) tells nothing and is left to the order."""
    def same(c, v):
        if c.dtype != v.dtype or c.device != v.device:
            return None
        if c.shape == v.shape and torch.equal(c, v):
            return False
        # Kept with dimensions of size 1 added or left out ((1, C, 1, 1) for a bias of C).
        if (c.shape != v.shape and _squeezed(c) == _squeezed(v)
                and torch.equal(c, v.reshape(c.shape))):
            return False
        if c.dim() == 2 and v.dim() == 2 and c.shape == v.t().shape and torch.equal(c, v.t()):
            return True
        return None

    found = []
    for c in floats:
        hits = [(v, t) for v in ref for t in (same(c, v),) if t is not None]
        if len(hits) == 1:
            found.append((c, hits[0][0], hits[0][1]))
    taken = {}
    for _, v, _ in found:
        taken[id(v)] = taken.get(id(v), 0) + 1
    return [(c, v, t) for c, v, t in found if taken[id(v)] == 1]


def _match_floats(ref, floats, in_order):
    """(candidate, reference) pairs for the reference's floating-point tensors `ref` among the
    candidate's floating-point tensors `floats`, each taken once: the next of the same shape
    after the last taken (in_order), or the one of its shape, where each shape is one tensor's on
    both sides (two of a shape, out of order, could pair wrongly: a scale of 16 with a bias of
    16); None where one has no match or a shape is shared."""
    if not in_order:
        by_shape = {}
        for c in floats:
            by_shape.setdefault(tuple(c.shape), []).append(c)
        shapes = [tuple(v.shape) for v in ref]
        if any(shapes.count(s) != 1 or len(by_shape.get(s, ())) != 1 for s in shapes):
            return None
        return [(by_shape[s][0], v) for s, v in zip(shapes, ref)]
    pairs, j = [], 0
    for v in ref:
        while j < len(floats) and floats[j].shape != v.shape:
            j += 1
        if j == len(floats):
            return None
        pairs.append((floats[j], v))
        j += 1
    return pairs


def _one_a_matrix(c, v):
    """Whether a pair of the _as_matrix bucket is one that _shaped_as makes sense of: the same
    _squeezed() shape, or one of them 2-D (a matrix, for the other's _rows() or its
    transpose); not two tensors of more dimensions in another order (a channels-last
    convolution weight, (C_out, kh, kw, C_in), for (C_out, C_in, kh, kw): reshaped, its values
    were scrambled and read as copied)."""
    return _squeezed(c) == _squeezed(v) or len(_squeezed(c)) == 2 or len(_squeezed(v)) == 2


def _match_per_shape(ref, floats, keys, valid=None):
    """(candidate, reference) pairs for the reference's floating-point tensors `ref` among the
    candidate's `floats`, in order within each shape, where each shape has as many tensors on
    both sides (the candidate's of other shapes left out), by the first of `keys` (functions
    of a tensor giving its bucket) for which that holds; None where none does. With
    _PER_SHAPE_KEYS: by exact shape, else by _squeezed() shape (size-1 dimensions aside: a
    (1, D) weight and (D,) biases are one bucket only where their exact shapes do not pair).
    Where _match_floats failed: a candidate that declares each bias before its weight, or its
    layers' tensors in another interleaving of shapes, took nothing (an honest transformer
    block's weights were all left to the seed)."""
    for key in keys:
        mine, wanted = {}, {}
        for c in floats:
            mine.setdefault(key(c), []).append(c)
        for v in ref:
            wanted.setdefault(key(v), []).append(v)
        if all(len(mine.get(shape, ())) == len(vs) for shape, vs in wanted.items()):
            pairs = [(c, v) for shape, vs in wanted.items() for c, v in zip(mine[shape], vs)]
            if valid is None or all(valid(c, v) for c, v in pairs):
                return pairs
    return None


_PER_SHAPE_KEYS = (lambda t: tuple(t.shape), _squeezed)


def _match_modules(ref, floats, ref_name, cand_name):
    """(candidate, reference) pairs for the reference's floating-point tensors `ref` among the
    candidate's `floats`, module by module: each module's tensors (those of one name but for
    its last part; ref_name and cand_name give a tensor's name) make a signature of their last
    names and shapes, and the reference's modules of a signature take the candidate's of the
    same signature in order, tensor by last name, where the signature has as many modules on
    both sides; then so by _squeezed() shapes among the modules left. Modules of a signature
    whose numbers differ are left out (to the order). Last names are read through
    _LAST_NAME_SYNONYMS (a LayerNorm's `gamma` and `beta`; _by_meaning). Two LayerNorms renamed
    (`norm1` for `ln1`) whose bias is declared before its weight were paired by order alone,
    each weight with a bias; a block's modules declared in another order (its MLP first) had its
    tensors of one shape swapped."""
    def modules(tensors, name_of):
        return [_by_meaning(leaves)
                for leaves in _by_module((name_of(t), t) for t in tensors).values()]

    pairs = []
    mine, wanted = modules(floats, cand_name), modules(ref, ref_name)
    for key in _PER_SHAPE_KEYS:
        def signature(leaves):
            return tuple(sorted((last, key(t)) for last, t in leaves.items()))

        by_signature = {}  # signature -> ([candidate modules], [reference modules])
        for side, found in ((0, mine), (1, wanted)):
            for leaves in found:
                by_signature.setdefault(signature(leaves), ([], []))[side].append(leaves)
        paired = set()
        for cand_modules, ref_modules in by_signature.values():
            if len(cand_modules) != len(ref_modules):
                continue
            for c, r in zip(cand_modules, ref_modules):
                pairs += [(c[last], r[last]) for last in r]
                paired.update((id(c), id(r)))
        mine = [m for m in mine if id(m) not in paired]
        wanted = [m for m in wanted if id(m) not in paired]
    return pairs


def build_reference(seed):
    """Model(*get_init_inputs()) under the seed (KernelBench: seed, init inputs, seed, Model)."""
    global _ref, _params, _cand_init
    # A fresh (nominal) table: the candidate's own draws at its import must not fix a size.
    _fresh_jitter(0, 1, False)
    try:
        _seed_generators(seed)
        got = _problem.get_init_inputs()
        init = _to_device(_input_list(got, "get_init_inputs()", flat=False))
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("get_init_inputs() failed:\n%s" % _format_exception(exc))
    # The candidate's own copy of the constructor arguments: a list the reference's constructor
    # changes in place (or a tensor it writes to) must not reach the candidate's.
    _cand_init = _deep_copy(init)
    _cand_init_spare[:] = [_deep_copy(init)]  # for a ModelNew built again (use_weights)
    try:
        with _NoGrad():
            _seed_generators(seed)
            # Left in training mode, as KernelBench leaves both models (BatchNorm normalises by
            # the batch's statistics; Dropout is active): the function judged is KernelBench's.
            _ref = _module_on_device(_problem.Model(*init), "Model")
    except BaseException as exc:
        raise ProblemError("Model(*get_init_inputs()) failed:\n%s" % _format_exception(exc))
    # Native candidates get copies: writing through kj_call.params must not touch the reference.
    # The state_dict, then the non-persistent buffers of a dtype the ABI passes.
    lazy = [name for name, t in list(_ref.named_parameters()) + list(_ref.named_buffers())
            if t is not None and _uninitialized(t)]
    if lazy:
        names = ", ".join(lazy[:4]) + (", ..." if len(lazy) > 4 else "")
        raise ProblemError("Model has parameters or buffers without values (%s: a lazy module's, "
                           "set by its first forward): kjudge copies the reference's weights "
                           "into the candidate when both are built, before any forward" % names)
    try:
        state = _state_tensors(_ref)
    except BaseException as exc:
        raise ProblemError("Model.state_dict() failed:\n%s" % _format_exception(exc))
    state.update((name, buf) for name, buf in _non_persistent_buffers(_ref).items()
                 if buf.dtype in _ABI_DTYPES)
    _params = [v.detach().clone(memory_format=torch.contiguous_format) for v in state.values()]
    try:  # and those drawn while the models were built (the table was reset before them)
        _kjudge.popcorn_pri.seal(2)
    except RuntimeError as exc:
        raise CandidateError("kjudge's jitter table was sealed before kjudge sealed it (%s): "
                             "the candidate chose the sizes kept in every trial" % exc)
    _param_names.clear()
    _param_names.extend(state.keys())
    _reach.watch_reference()


def _module_on_device(model, name):
    """A constructed model moved to the device; one that is not a torch.nn.Module (a plain class
    with __call__) read "'ModelNew' object has no attribute 'to'"."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("%s(...) made %s, not a torch.nn.Module: KernelBench's %s is an "
                        "nn.Module subclass" % (name, _a_type(type(model)), name))
    return model.to(DEVICE)


def build_candidate(seed):
    """ModelNew under the same seed, then the reference's weights copied in. Returns the copy
    method ("native" when the candidate is a native library: it gets copies of the reference's
    parameters and buffers, _params) and the names of the reference's parameters it left
    unpaired (_copy_weights)."""
    global _cand, _cand_seed, _weights_changed
    _cand_seed = seed
    if _candidate is None:
        _cand = None
        return "native", []
    _cand = _construct_candidate("ModelNew(*get_init_inputs()) failed")
    changed = []
    method, unpaired = _blamed_on_candidate(
        lambda: _as_candidate(lambda: _copy_weights(_ref, _cand, changed)),
        "copying the reference's weights into ModelNew failed")
    _weights_changed = bool(changed)
    _reach.seal()
    return method, unpaired


def _construct_candidate(failed, again=False):
    """ModelNew(*its constructor arguments) under the evaluation's seed, on kjudge's device, as
    the candidate's code; its failure is the candidate's error, `failed` its message. `again`:
    from a fresh copy of the arguments (the first constructor may have changed its own)."""
    def construct():
        init = _deep_copy(_cand_init_spare[0]) if again else _cand_init
        with _NoGrad():
            _seed_generators(_cand_seed)
            return _module_on_device(_candidate.ModelNew(*init), "ModelNew")
    return _blamed_on_candidate(lambda: _as_candidate(construct), failed)


# Whether the weight copy changed any of the candidate's tensors. Where its first trial fails
# with the reference's weights copied in, kjudge tries a ModelNew built under the seed alone
# (use_weights): an honest candidate that folds a constant into its parameters (relu(x W^T + b)
# * s as relu(x (sW)^T + sb)) computes the reference's function with the weights both models
# build under one seed (KernelBench's rule), not with the reference's. A fresh one, not the
# copied one's tensors written back: a candidate that had baked the copied weights into what
# its calls use (a torch.compile with freezing, a transposed copy made at its first call)
# failed with its own written back too.
_weights_changed = False
_cand_seed = 0
_copied_cand = None  # the candidate with the reference's weights, while a fresh one is tried


def _put(dst, src, changed):
    """dst.copy_(src), under no_grad; where that changes dst's values, dst goes into
    `changed`."""
    if not (dst.layout == torch.strided and src.layout == torch.strided
            and dst.dtype == src.dtype and _equal(dst, src)):
        changed.append(dst)
    dst.copy_(src)


def use_weights(which):
    """The candidate built under the seed alone, its own weights ("seed": a fresh ModelNew,
    the one with the reference's weights held meanwhile), the one with the reference's weights
    back ("copied"), or the fresh one kept and the other let go ("kept"). Returns whether the
    copy changed any of the candidate's tensors (without a change there is nothing to try)."""
    global _cand, _copied_cand
    if not _weights_changed:
        return False
    let_go = []  # the model this call lets go of
    if which == "seed":
        fresh = _construct_candidate("ModelNew(*get_init_inputs()), built again under the seed "
                                     "alone to try its own weights, failed", again=True)
        if _copied_cand is None:
            _copied_cand = _cand
        else:
            let_go.append(_cand)
        _cand = fresh
    elif which == "copied":
        if _copied_cand is not None:
            let_go.append(_cand)
            _cand, _copied_cand = _copied_cand, None
    else:
        let_go.append(_copied_cand)
        _copied_cand = None
    # These rebindings are kjudge's own (the fresh construction's check has run): the baseline
    # of the harness's bindings, against which the candidate's calls are checked, takes them.
    # Then the model let go is freed as the candidate's code: a __del__ of its that rebinds a
    # name of this module's is found as the candidate's change, not taken into the baseline.
    _reach.rebase_harness()
    _drop_as_candidate(let_go.clear)
    return True


_param_names = []
_cand_init = []  # ModelNew's constructor arguments (build_reference's copy)
_cand_init_spare = [[]]  # another copy, untouched by either constructor


def parameters():
    return [_describe(t, name) for t, name in zip(_params, _param_names)]


# --- inputs and outputs -------------------------------------------------------------------------

def _input_list(got, what, flat=True):
    """`what`'s result as a list: a list or tuple (a bare tensor would be split along its first
    dimension). `flat`: forward inputs, tensors and Python numbers only; nested containers would
    escape the copies and checks each input gets. Either is the problem's error. Constructor
    arguments may nest (layer sizes as a list, as in KernelBench's level 3)."""
    if not isinstance(got, (list, tuple)):
        raise ProblemError("%s returned %s, not a list or tuple of inputs"
                           % (what, _a(type(got).__name__)))
    for i, x in enumerate(got if flat else ()):
        if isinstance(x, (list, tuple, dict, set)):
            raise ProblemError("%s item %d is %s: kjudge passes tensors and Python numbers, "
                               "not containers of them" % (what, i, _a(type(x).__name__)))
        if not isinstance(x, (torch.Tensor, bool, int, float)):
            # A NumPy array, a string, None: nothing kjudge can copy, compare or pass to a
            # native candidate (an array used to fail inside the reproducibility check).
            raise ProblemError("%s item %d is %s: kjudge passes tensors and Python numbers "
                               "(bool, int, float)" % (what, i, _a(type(x).__name__)))
        if isinstance(x, torch.Tensor) and (x.layout != torch.strided or x.is_nested):
            # A sparse or nested tensor: torch cannot compare or copy it the way every input is
            # (the reproducibility check's torch.equal raised, an internal error).
            raise ProblemError("%s item %d is a %s tensor: kjudge passes dense (strided) "
                               "tensors; give the dense tensor and make the other in forward"
                               % (what, i, "nested" if x.is_nested
                                  else "layout " + str(x.layout).replace("torch.", "")))
    return list(got)


def _fresh_jitter(seed, scale, jitter):
    """A new popcorn_pri table, with the sizes drawn at the problem's import or while the reference
    was built (get_init_inputs, Model's constructor) pinned: those were nominal and keep that
    value in every trial, stress trials included, since the models are built once and their
    sizes must agree with the inputs'. Only sizes drawn first in get_inputs jitter."""
    _kjudge.popcorn_pri.reset(seed, scale, jitter)  # re-pins what seal() kept


def _make_inputs(data_seed, jitter_seed, scale, jitter=True):
    """get_inputs() under a fresh jitter table (_fresh_jitter)."""
    _fresh_jitter(jitter_seed, scale, jitter)
    bindings = _class_bindings(_problem) if _reach.entered is not None else None
    before = (bindings, _problem_contents(bindings)) if bindings is not None else None
    try:
        _seed_generators(data_seed)
        got = _problem.get_inputs()
    except BaseException as exc:
        raise ProblemError("get_inputs() failed:\n%s" % _format_exception(exc))
    _reach.adopt_problem_call(before)
    try:
        return [_plain(_to_device(x)) for x in _input_list(got, "get_inputs()")]
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("get_inputs()'s tensors could not be moved to %s:\n%s"
                           % (DEVICE, _format_exception(exc)))


def _clone(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def cached_free_bytes():
    """Device memory torch's caching allocator holds unused (0 on the CPU)."""
    if DEVICE != "cuda":
        return 0
    return max(0, int(torch.cuda.memory_reserved()) - int(torch.cuda.memory_allocated()))


def _copies(make, what):
    """make()'s copies of inputs; copies that cannot be allocated (sizes the machine cannot hold)
    are the problem's error, not kjudge's: "<what>: <the error's first line>"."""
    try:
        return make()
    except (MemoryError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not _out_of_memory(exc):
            raise
        raise ProblemError("%s: %s" % (what, _first_line(exc)))


def _trial_copies(inputs, side):
    """A copy of the trial's inputs for `side` (_copies)."""
    return _copies(lambda: [_clone(x) for x in inputs],
                   "the trial's inputs %s could not be copied for the %s"
                   % (_trial.get("shapes"), side))


def _out_of_memory(exc):
    """torch's out-of-memory errors, on the GPU and the host (a RuntimeError on the CPU)."""
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    text = str(exc)
    return "out of memory" in text or "can't allocate memory" in text


def _row_major(t):
    """Whether t's strides are the row-major ones of its sizes, every dimension's (torch's
    is_contiguous() passes any stride on a dimension of size 1: a (1, 8, 16) tensor transposed
    to (8, 1, 16) keeps strides (16, 128, 1))."""
    expected = 1
    for size, stride in zip(reversed(t.shape), reversed(t.stride())):
        if stride != expected:
            return False
        expected *= size
    return True


def _as_tensor_input(x):
    """Native ABI view of an input: tensors row-major (candidate.h: their strides those of their
    sizes, as the timing inputs' are), Python scalars as 0-dim tensors."""
    if isinstance(x, torch.Tensor):
        return x if x.numel() > 0 and _row_major(x) else _contiguous_clone(x)
    if isinstance(x, bool):
        return torch.tensor(x, dtype=torch.bool, device=DEVICE)
    if isinstance(x, int):
        try:
            return torch.tensor(x, dtype=torch.int64, device=DEVICE)
        except (OverflowError, RuntimeError, ValueError) as exc:
            raise ProblemError("input %d does not fit the int64 a native candidate is passed (%s)"
                               % (x, _first_line(exc)))
    if isinstance(x, float):
        return torch.tensor(x, dtype=torch.float64, device=DEVICE)
    raise ProblemError("input of type %s cannot be passed to a native candidate" % type(x).__name__)


def _a(name):
    """A type's name with its article: "an int", "a list"."""
    if name == "NoneType":
        return "None"
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _a_type(kind):
    """_a of a type's name, read without running anything of the type's (_stored_type_name)."""
    return _a(_plain_str(_stored_type_name(kind)))


def _number(v, who, error_type):
    """A Python number output as a 0-dim tensor of its kind: bool, int64 (compared exactly, as
    integer outputs are) or float64 (an int that int64 does not hold is `who`'s error)."""
    # Through torch and builtins as bound at load: an audit's copy of a call that returned a
    # number runs while the candidate's bindings (a rebound torch.tensor) are in force.
    dtype = _bool_dtype if _isinstance(v, _bool) else _int64 if _isinstance(v, _int) else \
        _float64
    try:
        return _make_tensor(v, dtype=dtype)
    except (OverflowError, RuntimeError, ValueError) as exc:
        raise error_type("%s returned a Python %s that no %s holds (%s)"
                         % (who, _type(v).__name__, _str(dtype).replace("torch.", ""),
                            _first_line(exc)))


_MAX_OUTPUTS = 65536


def _normalise(out, who, error_type, numbers=None):
    """Outputs as a list of tensors: a tensor, a tuple/list of tensors or numbers, or a number."""
    return _judgeable(_output_list(out, who, error_type, numbers), who, error_type)


def _number_kind(v):
    """What a number output was, for a message about the dtype it is compared as: "a Python
    float"; a subclass (numpy's float64) by its own name and its base's."""
    base = _bool if _isinstance(v, _bool) else _int if _isinstance(v, _int) else _float
    kind = _type(v)
    return ("a Python %s" % base.__name__ if kind is base
            else "%s (a Python %s)" % (_a_type(kind), base.__name__))


# NumPy's scalar types (numpy.int64, numpy.bool_, numpy.float32: not Python numbers, but for
# numpy.float64, a float subclass), where torch brought numpy in, and their item() as bound at
# load: an output of one is the Python number item() gives. They were the side's runtime error.
_numpy = sys.modules.get("numpy")
# By id: a set's `in` would run a metaclass's __hash__ and __eq__.
_NUMPY_SCALARS = {
    id(t): t for t in getattr(_numpy, "sctypeDict", {}).values()
    if isinstance(t, type) and issubclass(t, _numpy.generic)} if _numpy is not None else {}
_numpy_item = _numpy.generic.item if _numpy is not None else None


def _plain_number(v):
    """v, or the Python number a NumPy scalar of a builtin numpy type holds (only its exact
    types: no code of a subclass's runs)."""
    kind = _type(v)
    if _NUMPY_SCALARS.get(id(kind)) is kind and not _isinstance(v, (_bool, _int, _float)):
        item = _numpy_item(v)
        if _type(item) in (_bool, _int, _float):
            return item
    return v


def _output_list(out, who, error_type, numbers=None):
    """out as a list of tensors (_normalise); `numbers`, where given, gets an entry per output:
    _number_kind of one that was a number, "" of a tensor."""
    out = _plain_number(out)
    if isinstance(out, torch.Tensor):
        if numbers is not None:
            numbers.append("")
        return [out]
    if isinstance(out, (bool, int, float)):
        if numbers is not None:
            numbers.append(_number_kind(out))
        return [_number(out, who, error_type)]
    if isinstance(out, (list, tuple)):
        if len(out) > _MAX_OUTPUTS:
            # Each becomes a tensor, is described to C++ and compared: a million numbers took
            # seconds a call, and the evaluation ended timed out instead of judged.
            raise error_type("%s returned %s of %d items; kjudge compares at most %d outputs"
                             % (who, _a(type(out).__name__), len(out), _MAX_OUTPUTS))
        items = []
        for i, v in enumerate(out):
            v = _plain_number(v)
            if isinstance(v, torch.Tensor):
                items.append(v)
                kind = ""
            elif isinstance(v, (bool, int, float)):
                items.append(_number(v, who, error_type))
                kind = _number_kind(v)
            else:
                raise error_type("%s returned %s whose item %d is %s, not a tensor or number"
                                 % (who, _a(type(out).__name__), i, _a(type(v).__name__)))
            if numbers is not None:
                numbers.append(kind)
        return items
    raise error_type("%s returned %s, not a tensor, a tuple/list of tensors, or a number"
                     % (who, _a(type(out).__name__)))


def _without_values(t):
    """What tensor t is where its bytes are not its values (sparse or another layout, meta,
    quantized, nested): "a sparse_coo tensor"; "" for a dense one. Through the getters bound at
    load."""
    layout = _layout_of(t)
    return ("a %s tensor" % _str(layout).replace("torch.", "") if layout != _strided
            else "a meta tensor (no values)" if _is_meta(t)
            else "a quantized tensor" if _is_quantized(t)
            else "a nested tensor" if _is_nested(t) else "")


def _judgeable(outs, who, error_type):
    """outs, each a dense tensor with values in memory: a sparse, meta, quantized or nested one
    has no values kjudge can copy and compare, and is the error of the side that returned it (a
    reference's is the problem's; its copy failed first in the candidate's trial, which returned
    the same, and was blamed on the candidate)."""
    for i, t in _enumerate(outs):
        why = _without_values(t)
        if why:
            raise error_type("%s returned %s as output %d: kjudge compares dense tensors' values"
                             % (who, why, i))
    return outs


def _describe(t, name=""):
    """What kjudge's C++ reads a tensor by, through torch's C base class and builtins bound at
    load: an audit's copy runs while the candidate's own bindings are in force (its turn's), and
    a rebound Tensor.data_ptr or builtins.int ran its code in the copy."""
    return {
        "data": _int(_data_ptr(t)),
        "dtype": _str(_dtype_of(t)).replace("torch.", ""),
        "shape": _list(_size(t)),
        "strides": _list(_stride(t)),
        "name": name,
    }


def _host(t, reached=False):
    """A plain CPU copy whose memory holds its values: a contiguous CPU tensor came back as itself
    from .to("cpu").contiguous(), lazy flags and all (a negative or conjugate view, a ZeroTensor
    with no storage), and the comparison reads raw memory: -x read as x, a zero tensor as a null
    pointer. copy_ resolves them. A CPU tensor's memory is read first by _read_masked. reached: a
    copy kjudge's C++ keeps (copy_into), which takes an expansion as _reached gives it."""
    if reached:
        held = _reached(t)
        if held is not None:
            return held
    if _device_of(t).type == "cpu":
        copied = _read_masked(t)
        if copied is not None:
            if _is_contiguous(copied) and not _is_neg(copied) and not _is_conj(copied):
                return copied  # memory of the harness's own, holding the values as they read
            t = copied
    out = _empty(_size(t), dtype=_dtype_of(t), device="cpu")
    _copy_into(out, _detach(t))
    return out


def _read_masked(t):
    """CPU tensor t's elements gathered by kjudge's C++ with every signal blocked on this thread
    (_kjudge.copy_masked) into contiguous memory of the harness's own, viewed with t's size,
    dtype and negative or conjugate bit; None where it has no memory to read (no elements, a
    ZeroTensor). The first read of a forward's CPU outputs: a candidate returned memory it had
    made unreadable (mprotect) with a SIGSEGV handler of its own that computed the softmax into a
    page when something first read it, so that its timed calls computed nothing and every copy
    kjudge made of them (trials, audits) computed it there, outside the timed region: correct at
    34-78x. Read so, the fault ends the worker (the candidate's crash); torch's copy_, on its own
    threads, ran the handler. (Memory filled by a userfaultfd, which needs no signal, is refused
    by the worker's fence.) Only the elements are read: a view of 8 floats 128 MiB apart is 32
    bytes, not the span between them."""
    if _numel(t) == 0 or (_is_zerotensor is not None and _is_zerotensor(t)):
        return None
    size, stride, element = _tuple(_size(t)), _tuple(_stride(t)), _element_size(t)
    if (_offset_of(t) + _strided_reach(size, stride)) * element > _storage_nbytes(_storage_of(t)):
        raise RuntimeError("its size and strides reach past the end of its storage")
    buffer = _empty((_numel(t) * element,), dtype=_uint8, device="cpu")
    _copy_masked(_data_ptr(t), _list(size), _list(stride), element, _data_ptr(buffer))
    out = _view(_view(buffer, _dtype_of(t)), size)
    if _is_neg(t):
        out = _neg_view(out)
    if _is_conj(t):
        out = _conj(out)
    return out


def _strided_reach(size, stride):
    """The elements from a tensor's first to the farthest its size and strides reach: 1 + the
    sum of (size - 1) * |stride| (core/strided_copy.hpp's strided_reach); at least its element
    count unless two of its indices share an element (an expansion). Sizes are not 0."""
    reach = 1
    for n, step in zip(size, stride):
        reach += (n - 1) * (step if step >= 0 else -step)
    return reach


def _reached(t):
    """A tensor whose strides reach fewer elements than it has (x.expand(n, n) of one float: 4
    bytes of memory, n * n elements) as a copy of the harness's own of the elements they reach,
    viewed with its size and strides; None for any other. Written out, such a candidate output
    was copied whole before its shape was compared: a 2^14 x 2^14 expansion of one float
    returned for a softmax took 39 s and 2.8 GB over three trials on the CPU machine. kjudge's
    C++ keeps the elements reached and writes the tensor out only where its shape and dtype are
    the reference's (bridge.cpp, kept_views). A ZeroTensor (no memory, every element zero) is
    one zero viewed with strides 0: an expansion of one was written out whole here, 1:45 and
    8.9 GB for a 2^15 x 2^15 one (a reviewer's)."""
    n = _numel(t)
    if n == 0:
        return None
    size, stride = _tuple(_size(t)), _tuple(_stride(t))
    if _is_zerotensor is not None and _is_zerotensor(t):
        if n == 1:
            return None
        zero = _empty((1,), dtype=_dtype_of(t), device="cpu")
        _zero_fill(zero)
        return _as_strided(zero, size, (0,) * _len(size), 0)
    reach = _strided_reach(size, stride)
    if reach >= n:
        return None
    span = _as_strided(_detach(t), (reach,), (1,))  # from t's first element, in its storage
    copied = _read_masked(span) if _device_of(t).type == "cpu" else span
    if (_device_of(copied).type != "cpu" or not _is_contiguous(copied) or _is_neg(copied)
            or _is_conj(copied)):
        flat = _empty((reach,), dtype=_dtype_of(t), device="cpu")
        _copy_into(flat, copied)
        copied = flat
    return _as_strided(copied, size, stride, 0)


def _host_at_once(t):
    """_host(t) for a copy that kjudge's C++ makes at once (_held), of a tensor _judgeable let
    through (dense, strided, with values): a CPU tensor whose memory already holds its values as
    they read (contiguous, no negative or conjugate bit, not a ZeroTensor) is given as itself,
    and C++ copies its bytes, one copy instead of two (a 128 MiB output's audit copy took
    100-120 ms through _host on the CPU machine)."""
    if (_device_of(t).type == "cpu" and _is_contiguous(t) and not _is_neg(t) and not _is_conj(t)
            and (_is_zerotensor is None or not _is_zerotensor(t))
            # Its storage holds every byte C++ reads (a storage the candidate shrank does not).
            and _storage_nbytes(_storage_of(t))
            >= (_offset_of(t) + _numel(t)) * _element_size(t)):
        return _detach(t)
    return _host(t, reached=True)


_poison_turn = [0]  # advanced by every trial and every timing check (_next_poison)


def _next_poison():
    _poison_turn[0] += 1


def _poison(t):
    """Fills t with what no honest output holds: NaN for floating point. Integer and bool outputs
    have no such value, so their fill alternates from one trial (or timing check) to the next,
    byte 0x5A or 0xA5, True or False: an element a native candidate leaves unwritten fails in
    some trial, whatever the right answer is (an all-True answer matched a fill of True)."""
    odd = _poison_turn[0] & 1
    if t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(not odd)
    else:
        # Flat first: a 0-d integer tensor (argmax, a count) has no byte view of its own.
        t.view(-1).view(torch.uint8).fill_(0xA5 if odd else 0x5A)
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
    return {"shapes": shapes, "dtypes": dtypes, "jitter": jitter,
            "pinned": list(_kjudge.popcorn_pri.pinned())}


# --- the candidate's reach ----------------------------------------------------------------------
#
# A Python candidate shares this interpreter with the reference and with this harness. What its
# code changes there is kept to its own calls, or caught:
# - torch's global settings (_settings_table: TF32 and reduced-precision matmul, cuDNN, SDPA
#   backends, autocast, default dtype and device, determinism, CPU threads, global module hooks)
#   and the public bindings of torch's namespaces, torch.nn's module classes and builtins: each
#   side runs under its own. Outside the candidate's code the reference's are in force (those
#   found when the candidate's code was last entered); what the candidate changed is put back for
#   each of its calls and reported (flag candidate_changed_torch_state), never shared with the
#   reference. Found after timing instead, a change is the candidate's error (the reference's
#   samples may have run under it), unless torch's own code made it.
# - this harness's bindings, the problem module's and its classes', the reference model (its
#   modules, their attributes, parameters, buffers and hooks, by identity; its parameters' values),
#   torch's mode stacks and the interpreter's profile and trace hooks: changed by the candidate's
#   code, they are the candidate's error.
# - outputs are copied to the host, and must come back as plain tensors, before the candidate's
#   call returns to the harness: nothing its objects do later (a tensor subclass's
#   __torch_function__ once the reference has run) can change what is compared.
# What stays out of reach of these checks (threads the candidate starts, memory it writes through
# ctypes, dispatcher kernels it registers) is why the verdict is formed in another process.

_ABSENT = object()
_UNREADABLE = object()
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_set_default_device = getattr(torch, "set_default_device", None)
_equal = torch.equal
# What refresh() calls, bound when the harness loads (before any candidate code): rewriting the
# timing inputs is kjudge's work and must not run a candidate's rebinding of torch.mul, of
# Tensor.is_floating_point or of a builtin (_reach keeps those to the candidate's calls, and its
# state is the candidate's during the candidate's turns; switching it for every rewrite would put
# host work before each of the candidate's timed samples that the reference's do not have). Torch's
# settings do not change what mul(..., out=) computes, but a torch function mode in force (the
# candidate's set_default_device pushes one, whose class its code may have patched) would put
# Python code in the call: the rewrite runs with torch functions' overrides and modes disabled
# (a torch dispatch mode in force is the candidate's error there: _before_candidate_rewrite).
_no_torch_function = torch._C.DisableTorchFunction
_mul = torch.mul
_Tensor = torch.Tensor
_float, _isinstance, _type, _len, _enumerate = float, isinstance, type, len, enumerate
_getweakrefcount = weakref.getweakrefcount
_callable, _ModuleType = callable, types.ModuleType
# A tensor's layout read through torch's C base class, whose attributes cannot be rebound (an
# immutable type): refresh() checks every timing input against the layout it had when made.
_TensorBase = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase")
_size, _stride, _data_ptr = _TensorBase.size, _TensorBase.stride, _TensorBase.data_ptr
_dtype_of, _device_of = _TensorBase.dtype.__get__, _TensorBase.device.__get__
_is_floating_point = _TensorBase.is_floating_point
_storage_of, _offset_of, _set = (_TensorBase.untyped_storage, _TensorBase.storage_offset,
                                 _TensorBase.set_)
_copy_into, _as_strided, _zero_fill = (_TensorBase.copy_, _TensorBase.as_strided,
                                       _TensorBase.zero_)
_tuple = tuple
# Floating dtypes without a mul of their own (float8): rescaled through float32.
_as_float32 = _TensorBase.float
_NO_MUL = frozenset(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                                "float8_e5m2fnuz", "float8_e8m0fnu")
                    if hasattr(torch, n))
_sum_of, _numel = _TensorBase.sum, _TensorBase.numel
# _digest's: a tensor's bytes as 8-byte words.
_detach, _contiguous, _reshape, _view = (_TensorBase.detach, _TensorBase.contiguous,
                                         _TensorBase.reshape, _TensorBase.view)
_resolve_conj, _resolve_neg, _item, _to = (_TensorBase.resolve_conj, _TensorBase.resolve_neg,
                                           _TensorBase.__getitem__, _TensorBase.to)
_uint8, _int64 = torch.uint8, torch.int64
# _read_masked's.
_copy_masked, _conj, _neg_view = _kjudge.copy_masked, _TensorBase.conj, torch._neg_view
_value, _str, _slice = _TensorBase.item, str, slice
# The timing key's hash (bridge.cpp): kjudge's C++ keeps the key and answers only for the sample
# numbers and lanes of the call it has in progress.
_keyed_by_kjudge = _kjudge.keyed
# _audit_outputs' exact types, and what _audit_copy calls (bound before any candidate code).
_Parameter, _list = torch.nn.Parameter, list
# _read_number's and _audit_outputs' reads of a subclass of a number, tuple or list: the base
# class's own C methods, which run nothing of the subclass's.
_issubclass, _range = issubclass, range
# A type's name as type itself stores it (then copied into a plain str, _plain_str): a
# metaclass's __name__ property, or a str subclass set as the name, would run the candidate's
# code in a message.
_stored_type_name = type.__dict__["__name__"].__get__
_float_value, _int_value = float.__float__, int.__int__
_tuple_len, _tuple_item, _list_len, _list_item = (tuple.__len__, tuple.__getitem__,
                                                  list.__len__, list.__getitem__)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
_cuda_synchronize, _empty = torch.cuda.synchronize, torch.empty
_copy_of, _layout_of, _strided = _TensorBase.clone, _TensorBase.layout.__get__, torch.strided
_is_quantized, _is_meta = _TensorBase.is_quantized.__get__, _TensorBase.is_meta.__get__
_is_nested = _TensorBase.is_nested.__get__
# _host_at_once's, and _describe's int.
_is_contiguous, _is_neg, _is_conj = (_TensorBase.is_contiguous, _TensorBase.is_neg,
                                     _TensorBase.is_conj)
_is_zerotensor = getattr(_TensorBase, "_is_zerotensor", None)
_element_size, _storage_nbytes = _TensorBase.element_size, torch.UntypedStorage.nbytes
_int = int
# _number's.
_make_tensor, _bool_dtype, _float64, _bool = torch.tensor, torch.bool, torch.float64, bool
# Autograd off for the rewrite (an input that requires grad, an nn.Parameter say, makes
# mul(..., out=) raise with it on), by torch's C switch, bound here like the rest.
_grad_enabled, _set_grad_enabled = torch._C.is_grad_enabled, torch._C._set_grad_enabled


class _NoGrad:
    """torch.no_grad() as this harness enters it around every call it makes of either side, by
    torch's C switch bound above. torch.no_grad's __enter__ and __exit__ are Python attributes of
    its class, which a candidate can replace while torch.no_grad stays the same object: one whose
    __exit__ found the reference's outputs among its caller's locals and doubled them had its
    doubled softmax read correct, and one whose __enter__ slept in the reference's calls read
    2.2x for the same softmax, on the CPU."""

    __slots__ = ("was",)

    def __enter__(self):
        self.was = _grad_enabled()
        _set_grad_enabled(False)

    def __exit__(self, *exc):
        _set_grad_enabled(self.was)
        return False


def _layout(x):
    """(size, stride, dtype, device, data pointer) of a tensor; None for anything else."""
    if not _isinstance(x, _Tensor):
        return None
    return (_tuple(_size(x)), _tuple(_stride(x)), _dtype_of(x), _device_of(x), _data_ptr(x))


def _made(x):
    """What refresh() checks a working copy against and puts back: (the tensor, its _layout, its
    storage, its offset in the storage); None for anything else."""
    if not _isinstance(x, _Tensor):
        return None
    return (x, _layout(x), _storage_of(x), _offset_of(x))


def _restore(x, made, k):
    """Puts working copy x back on the storage it was made with, in the size, strides and offset
    it was made with (a forward or anything else may have restrided or resized it in place, or
    given it other storage: the rewrite's out= keeps the strides of an output of the right
    shape, so a restrided copy stayed so, and the side was timed on it). A copy grown in place
    keeps its storage object, which the growth reallocated: put back on it at its new address, as
    the rewrite's out= did before (a captured graph still reads the old address; the check of the
    graphs after timing sees that). A copy whose storage cannot hold it any more, or whose dtype
    or device changed (only assigning its .data does that), is an error."""
    _, layout, storage, offset = made
    try:
        _set(x, storage, offset, layout[0], layout[1])
    except RuntimeError as exc:
        raise CandidateError("a timing input of set %d can no longer be put back on its own "
                             "storage (%s): the candidate changed kjudge's timing inputs"
                             % (k, _first_line(exc)))
    if _layout(x)[:4] != layout[:4]:
        raise CandidateError("a timing input of set %d changed its dtype or device: the "
                             "candidate changed kjudge's timing inputs" % k)


def _under_torch(path):
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _attribute_setting(owner_path, name):
    owner = _under_torch(owner_path)
    if owner is None:
        return None
    return ("torch.%s.%s" % (owner_path, name), lambda: getattr(owner, name),
            lambda v: setattr(owner, name, v))


def _call_setting(get_path, set_path):
    get, put = _under_torch(get_path), _under_torch(set_path)
    if get is None or put is None:
        return None
    return ("torch.%s()" % get_path, get, put)


def _determinism():
    return (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())


def _set_determinism(v):
    torch.use_deterministic_algorithms(v[0], warn_only=v[1])


_SUBNORMAL = 5e-324  # the smallest positive double, subnormal


def _flush_denormal():
    """Whether this thread flushes subnormal floats to zero, as torch.set_flush_denormal(True)
    makes it (the CPU's FTZ and DAZ bits; torch has no getter). The product of two Python floats
    runs on the same FPU state as torch's CPU kernels on this thread, and is 0 then."""
    one = 1.0
    return _SUBNORMAL * one == 0.0


def _default_device():
    """The device set_default_device installed (None: none, tensors default to the CPU)."""
    context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    return None if context is None else context.device


_HOOKS = None  # torch.nn.modules.module, whose _global_* dicts hold hooks every module runs


def _global_hooks():
    return _tuple((k, _tuple(v.items())) for k, v in _sorted(vars(_HOOKS).items())
                  if k.startswith("_global_") and _isinstance(v, dict))


def _set_global_hooks(v):
    for k, items in v:
        d = getattr(_HOOKS, k)
        d.clear()
        d.update(items)


def _settings_table():
    """(label, get, set) for each global setting this torch has whose getter works. Ordered so
    that applying them in turn lands where asked: the newer fp32_precision switches outermost
    first, then the older flags that alias them."""
    global _HOOKS
    rows = [_attribute_setting(owner, "fp32_precision") for owner in (
        "backends", "backends.cuda.matmul", "backends.cudnn", "backends.cudnn.conv",
        "backends.cudnn.rnn", "backends.mkldnn", "backends.mkldnn.matmul",
        "backends.mkldnn.conv", "backends.mkldnn.rnn")]
    rows += [_attribute_setting("backends.cuda.matmul", name) for name in (
        "allow_tf32", "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")]
    rows += [_attribute_setting("backends.cudnn", name) for name in (
        "allow_tf32", "enabled", "benchmark", "benchmark_limit", "deterministic")]
    rows.append(_attribute_setting("backends.mkldnn", "enabled"))
    # Which kernels the reference's CPU convolutions and einsums take, how many cuFFT plans it
    # keeps (none: every FFT planned again) and whether its synchronisations warn or raise.
    rows += [_attribute_setting("backends.opt_einsum", name) for name in ("enabled", "strategy")]
    if DEVICE == "cuda":  # both getters initialise CUDA: not on the CPU, nor before setup()
        rows.append(_attribute_setting("backends.cuda.cufft_plan_cache", "max_size"))
    rows += [_call_setting(get, put) for get, put in (
        ("get_float32_matmul_precision", "set_float32_matmul_precision"),
        ("get_default_dtype", "set_default_dtype"),
        ("get_num_threads", "set_num_threads"),
        ("backends.cuda.flash_sdp_enabled", "backends.cuda.enable_flash_sdp"),
        ("backends.cuda.mem_efficient_sdp_enabled", "backends.cuda.enable_mem_efficient_sdp"),
        ("backends.cuda.math_sdp_enabled", "backends.cuda.enable_math_sdp"),
        ("backends.cuda.cudnn_sdp_enabled", "backends.cuda.enable_cudnn_sdp"),
        ("backends.cuda.preferred_linalg_library", "backends.cuda.preferred_linalg_library"),
        ("backends.cuda.preferred_blas_library", "backends.cuda.preferred_blas_library"),
        ("backends.mha.get_fastpath_enabled", "backends.mha.set_fastpath_enabled"),
        ("_C._get_nnpack_enabled", "_C._set_nnpack_enabled"))]
    if DEVICE == "cuda":
        rows.append(_call_setting("cuda.get_sync_debug_mode", "cuda.set_sync_debug_mode"))
    # Native state of the process, outside torch's settings, that a candidate reaches through
    # ctypes and the reference's calls run under: MKL's thread-local thread count (its forward
    # set 1 on leaving, and the reference's matmuls ran on one core: an exact copy read 1.9x on
    # the CPU, unflagged), and the CPU affinity of the worker's threads (every thread pinned to
    # one CPU: 4.3x). Both are read and set on the timing thread, which the forwards run on.
    rows.append(("MKL's thread count (mkl_get_max_threads)", _mkl_threads, _set_mkl_threads))
    # How many threads the reference's parallel regions get, beyond the counts above: OpenMP's
    # nesting limit (0 ran every region of MKL's and ATen's on one thread) and its dynamic
    # adjustment, and MKL's BLAS domain's own count (a candidate that set it to one through an
    # internal symbol read 1.9x, mkl_get_max_threads unmoved; MKL exports no setter of it, so
    # such a change is the candidate's error). And the thread's rounding mode and SSE exception
    # masks (a rounding upward left by the candidate's fesetround had the next trial's
    # get_inputs() draw other values, blamed on the problem).
    rows.append(("OpenMP's nesting limit and dynamic threads (omp_get_max_active_levels, "
                 "omp_get_dynamic)", _openmp_state, _set_openmp_state))
    rows.append(("MKL's BLAS thread count (mkl_serv_domain_get_max_threads)", _mkl_blas_threads,
                 _no_setter))
    rows.append(("the floating-point rounding mode and exception masks (fegetround, MXCSR)",
                 _fp_control, _set_fp_control))
    # Transparent huge pages, off for the whole process by prctl: each fresh allocation of the
    # reference's then faults in 4 KiB pages where the system gives 2 MiB ones.
    rows.append(("transparent huge pages off (prctl PR_GET_THP_DISABLE)", _thp_disabled,
                 _set_thp_disabled))
    if _PROCESS_CPUS and not _kjudge.openmp_binds_threads():
        rows.append(("the CPU affinity of the worker's threads", _pinned_threads,
                     lambda v: _set_threads(v, _PROCESS_CPUS)))
    rows.append(("torch.are_deterministic_algorithms_enabled()", _determinism, _set_determinism))
    # CPU numerics and speed: subnormals flushed to zero on this thread (and on threads it starts).
    rows.append(("torch.set_flush_denormal", _flush_denormal, torch.set_flush_denormal))
    for dev in ("cpu", "cuda"):  # autocast, per device type (torch >= 2.4 takes the device)
        rows.append(("torch.is_autocast_enabled(%r)" % dev,
                     lambda d=dev: torch.is_autocast_enabled(d),
                     lambda v, d=dev: torch.set_autocast_enabled(d, v)))
        rows.append(("torch.get_autocast_dtype(%r)" % dev,
                     lambda d=dev: torch.get_autocast_dtype(d),
                     lambda v, d=dev: torch.set_autocast_dtype(d, v)))
    if _set_default_device is not None and hasattr(torch, "_GLOBAL_DEVICE_CONTEXT"):
        rows.append(("torch.get_default_device()", _default_device, _set_default_device))
    _HOOKS = _under_torch("nn.modules.module")
    if _HOOKS is not None:
        rows.append(("torch.nn.modules.module global hooks", lambda: _Same(_global_hooks()),
                     lambda v: _set_global_hooks(v.value)))
    # The interpreter's: code that runs inside whatever call is running, the reference's timed
    # ones among them. A candidate's gc callback (with a threshold of 1, run at nearly every
    # allocation) that slept inside the reference's calls read correct at 2.66x on the CPU.
    rows.append(("gc.get_threshold()", _gc_get_threshold, lambda v: _gc_set_threshold(*v)))
    rows.append(("gc.isenabled()", _gc_switch, _set_gc_switch))
    rows.append(("gc.callbacks", lambda: _Same(_tuple(_gc_callbacks)),
                 lambda v: _gc_callbacks.__setitem__(slice(None), list(v.value))))
    rows.append(("signal handlers", lambda: _Same(_signal_handlers()),
                 lambda v: _set_signal_handlers(v.value)))
    # The interpreter's, which the reference's code runs under too: a candidate's
    # warnings.simplefilter("error") turned the reference's warnings into its failure, a lowered
    # recursion limit failed its get_inputs(), a sys.stdout on a full disk its print(): each then
    # blamed on the problem. torch.compile raises the recursion limit and imports sympy, which
    # adds a filter: kept to the candidate's calls without a note (_QUIET_SETTINGS).
    rows.append(("sys.getrecursionlimit()", _getrecursionlimit, _setrecursionlimit))
    rows.append(("warnings.filters", lambda: _Same(_tuple(warnings.filters)),
                 _set_warning_filters))
    for name in ("stdout", "stderr"):
        rows.append(("sys." + name, lambda n=name: _Same(getattr(sys, n)),
                     lambda v, n=name: setattr(sys, n, v.value)))
    # The process's, below Python: what libraries read at their first use (MKL_CBWR, oneDNN's
    # ISA limit, cuBLAS's workspace; _start_libraries() has the CPU ones read before the
    # candidate's code) and the handlers the kernel runs, set from C (a candidate's sigaction
    # through ctypes, with a POSIX timer every 150 us, slept in each signal inside the
    # reference's calls: 2.3x on the CPU, unflagged: Python's table of handlers still read the
    # default). Both kept to the candidate's calls without a note: candidates set build
    # variables, and JIT libraries install crash handlers, at import. The C handlers after
    # Python's, which set them too.
    rows.append(("the process environment", _environment, _set_environment))
    rows.append(("signal handlers set from C (sigaction)", _signal_actions, _set_signal_actions))
    table = []
    for row in rows:
        if row is None:
            continue
        try:
            row[1]()
        except Exception:
            continue
        table.append(row)
    return table


# The CPUs the worker may use, as the harness loaded (before any code of the candidate's): its
# threads' affinity, unless a thread's is found otherwise (_pinned_threads).
_PROCESS_CPUS = tuple(_kjudge.thread_cpus())  # immutable: the seal checks bindings, not contents
_threads_off, _set_threads = _kjudge.threads_off, _kjudge.set_threads
_mkl_threads, _set_mkl_threads = _kjudge.mkl_threads, _kjudge.set_mkl_threads
_thp_disabled, _set_thp_disabled = _kjudge.thp_disabled, _kjudge.set_thp_disabled
_openmp_state, _mkl_blas_threads = _kjudge.openmp_state, _kjudge.mkl_blas_threads


class _FpControl(int):
    """fp_control()'s value, shown as what it says: "rounding mode 0x0, MXCSR controls 0x1f80"
    (the rounding mode as fegetround() gives it: 0 is to nearest)."""

    __slots__ = ()

    def __repr__(self):
        return "rounding mode 0x%x, MXCSR controls 0x%04x" % (int(self) >> 16, int(self) & 0xFFFF)


def _fp_control():
    return _FpControl(_kjudge.fp_control())


def _set_openmp_state(v):
    if not _kjudge.set_openmp_state(v):
        raise RuntimeError("OpenMP's runtime kept another state")


def _set_fp_control(v):
    if not _kjudge.set_fp_control(v):
        raise RuntimeError("the C library refused the rounding mode")


def _no_setter(v):
    raise RuntimeError("no function sets it back")
_c_environment, _set_c_environment = _kjudge.environment, _kjudge.set_environment
_signal_actions, _set_c_signal_actions = _kjudge.signal_actions, _kjudge.set_signal_actions
# os.environ's own copy, which the reference's Python code reads (bytes to bytes on POSIX).
_ENVIRON_DATA = getattr(os.environ, "_data", None)
_sorted, _bytes, _dict_items = sorted, bytes, dict.items


def _environment():
    """The process's environment: the C library's (the variables native code reads) and the
    mapping os.environ had at load (what the problem's Python code reads), each sorted; only
    exact bytes, through builtins bound at load, so no code of a candidate's runs, and compared
    with the tuples' own ==."""
    py = ()
    if _type(_ENVIRON_DATA) is dict:
        py = _tuple(_sorted((k, v) for k, v in _dict_items(_ENVIRON_DATA)
                            if _type(k) is _bytes and _type(v) is _bytes))
    return (_tuple(_sorted(_c_environment())), py)


def _set_environment(wanted):
    c, py = wanted
    if _set_c_environment(_list(c)):
        raise RuntimeError("setenv refused a variable")
    if _type(_ENVIRON_DATA) is dict:
        # Only the entries that differ: cleared and filled, the mapping would be empty for a
        # moment to any other thread that reads it.
        want = dict(py)
        for k in [k for k in _ENVIRON_DATA if k not in want]:
            del _ENVIRON_DATA[k]
        for k, v in _dict_items(want):
            if _ENVIRON_DATA.get(k) is not v:
                _ENVIRON_DATA[k] = v


def _set_signal_actions(wanted):
    if _set_c_signal_actions(_list(wanted)):
        raise RuntimeError("sigaction refused a disposition")
# glibc's malloc tunables (mallopt: the mmap and trim thresholds, top pad, fast bins, perturb)
# have no getter, so a change cannot be seen: kjudge's values (the environment's, else the
# largest glibc's own dynamic thresholds reach) are set when the checks are armed and again at
# every switch of sides, so each side's calls start under them. A candidate that set a 64 KiB
# mmap threshold at import made every 16 MB output of the reference a fresh mapping, paged in
# at each call: an exact copy of the reference read 4.8x on the CPU.
_apply_allocator_tunables = _kjudge.apply_allocator_tunables
# MKL's and oneDNN's verbose modes have no getter either: each of their calls then prints a line
# to the process's stdout (a descriptor the candidate may point at a file it opened O_DSYNC, where
# every line waits for the disk: an exact copy of the reference read 1.6x when its forward turned
# MKL's on for the reference's calls). Turned off with the tunables, at every switch of sides.
_set_verbose = [f for f in (getattr(getattr(torch._C, "_verbose", None), n, None)
                            for n in ("mkl_set_verbose", "mkldnn_set_verbose")) if f is not None]


def _quiet_libraries():
    for f in _set_verbose:
        f(0)


class _Pinned(tuple):
    """The worker's threads whose CPU affinity is not the process's: (thread id, CPUs) pairs."""

    __slots__ = ()

    def __repr__(self):
        return "; ".join("thread %d on CPUs %s" % (t, ",".join(map(str, c))) for t, c in self) \
            or "every thread on the worker's CPUs"


def _pinned_threads():
    return _Pinned((t, tuple(c)) for t, c in _threads_off(_PROCESS_CPUS))


# Signals whose Python handler can be read and set (SIGKILL and SIGSTOP have none). The functions
# as the harness loaded, and the interpreter's own list of gc callbacks (the one it runs, whatever
# gc.callbacks is later bound to): a candidate that rebound signal.getitimer and
# signal.getsignal at import hid its timer and its handler from the checks. _signal's own
# functions, not signal's wrappers: those make an enum of every handler they read, and reading
# all 60 at each switch of sides took 54 us against 4.
_SIGNALS = sorted(int(s) for s in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
_getsignal, _set_signal, _getitimer = _signal.getsignal, _signal.signal, _signal.getitimer
_gc_get_threshold, _gc_set_threshold = gc.get_threshold, gc.set_threshold
_gc_isenabled, _gc_enable, _gc_disable = gc.isenabled, gc.enable, gc.disable
# While the reference's state is in force the cycle collector's automatic passes are held off
# (_Reach.use): a pass runs the finalisers of whatever garbage it finds, the candidate's among
# them, inside whatever code allocates, and what such a finaliser changed while the reference's
# state was in force was taken for the reference's own (a finaliser on a cycle of the
# candidate's that rebinds torch.matmul, collected in the reference's turn). [held, the switch
# as asked meanwhile]: the settings row reads and sets the switch as asked.
_gc_held = [False, True]


def _gc_switch():
    return _gc_held[1] if _gc_held[0] else _gc_isenabled()


def _set_gc_switch(on):
    if _gc_held[0]:
        _gc_held[1] = bool(on)
    elif on:
        _gc_enable()
    else:
        _gc_disable()


def _hold_gc(held):
    """Holds the collector's automatic passes off (held), or gives back the switch as asked."""
    if held and not _gc_held[0]:
        _gc_held[1] = _gc_isenabled()
        _gc_held[0] = True
        _gc_disable()
    elif not held and _gc_held[0]:
        _gc_held[0] = False
        if _gc_held[1]:
            _gc_enable()
_gc_callbacks = gc.callbacks
_ITIMERS = (("ITIMER_REAL", signal.ITIMER_REAL), ("ITIMER_VIRTUAL", signal.ITIMER_VIRTUAL),
            ("ITIMER_PROF", signal.ITIMER_PROF))


_getrecursionlimit, _setrecursionlimit = sys.getrecursionlimit, sys.setrecursionlimit
_setprofile, _settrace = sys.setprofile, sys.settrace
# The list the interpreter's warnings machinery was given at load.
_warning_filters = warnings.filters
# Settings kept to each side's calls whose change is not reported (see _settings_table).
_QUIET_SETTINGS = frozenset(("sys.getrecursionlimit()", "warnings.filters",
                             "the process environment", "signal handlers set from C (sigaction)"))


def _same_objects(a, b):
    """Tuples item by item, builtin numbers and strings by value (their __eq__ is the
    interpreter's own), anything else by identity: no __eq__ of a candidate's object runs."""
    kind = _type(a)
    if kind is not _type(b):
        return False
    if kind is _tuple:
        return _len(a) == _len(b) and all(_same_objects(x, y) for x, y in zip(a, b))
    if kind in _PLAIN_VALUES:
        return a == b
    return a is b


_PLAIN_VALUES = frozenset((int, float, str, bytes, bool, type(None)))


class _Same:
    """A setting's value compared by _same_objects: the objects are the candidate's (a
    sys.stdout, a filter's category, a signal handler, a gc callback, a module hook), whose
    __eq__ could answer "unchanged" and would run inside the reference's turns."""

    __slots__ = ("value",)
    __hash__ = None

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return _type(other) is _Same and _same_objects(self.value, other.value)

    def __repr__(self):
        return _plain_text(self.value)


def _plain_text(v):
    """v as text without running any of its own code: tuples item by item, builtin values by
    their repr, plain functions by module and name, anything else by its type's name."""
    kind = _type(v)
    if kind is _tuple:
        return "(%s)" % ", ".join(_plain_text(x) for x in v)
    if kind in _PLAIN_VALUES:
        return repr(v) if kind is not str or _len(v) <= 80 else repr(v[:77]) + "..."
    if kind is types.FunctionType or kind is types.BuiltinFunctionType:
        module = v.__module__
        return ("%s.%s" % (_plain_str(module), _plain_str(v.__qualname__))
                if _isinstance(module, str) else _plain_str(v.__qualname__))
    return _a_type(kind)


def _set_warning_filters(wanted):
    """warnings.filters as `wanted` (_Same of a tuple of filters), in the list the module was
    loaded with (bound again where a candidate bound another). The filters' version is not
    bumped: bumped at every switch of sides (twice a timed sample pair), it cleared every
    module's record of warnings shown, and a reference that warns on each call would print its
    warning in every timed sample. A candidate's simplefilter() bumps it itself."""
    warnings.filters = _warning_filters
    _warning_filters[:] = list(wanted.value)


def _signal_handlers():
    """(signal number, Python handler) for every signal Python holds a handler of (not one set
    from C, which reads None and cannot be set back)."""
    out = []
    for number in _SIGNALS:
        handler = _getsignal(number)
        if handler is not None:
            out.append((number, handler))
    return tuple(out)


def _set_signal_handlers(wanted):
    for number, handler in wanted:
        if _getsignal(number) is not handler:  # by identity: no __ne__ of a candidate's runs
            _set_signal(number, handler)


def _read(get):
    try:
        return get()
    except Exception:  # torch refuses to read some after a mix of old and new precision APIs
        return _UNREADABLE


def _same_value(a, b):
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _precision_parent(label):
    """The fp32_precision row whose value a row of "none" takes (torch's backends.cuda.matmul
    and backends.cudnn inherit backends', backends.cudnn.conv inherits backends.cudnn's), or
    None for the outermost one and for rows of other settings."""
    tail = ".fp32_precision"
    if not label.endswith(tail) or label == "torch.backends" + tail:
        return None
    owner = label[:-len(tail)]
    return ("torch.backends" if owner == "torch.backends.cuda.matmul"
            else owner.rsplit(".", 1)[0]) + tail


def _legacy_precision(label, settings):
    """What an fp32_precision of "none" all the way up means for `label`'s backend: its legacy
    allow_tf32 flag's choice (cuBLAS's off by default, cuDNN's on), IEEE for oneDNN; "none"
    where that is not known."""
    flag = _UNREADABLE
    if ".cuda.matmul." in label:
        flag = settings.get("torch.backends.cuda.matmul.allow_tf32", _UNREADABLE)
    elif ".cudnn." in label:
        flag = settings.get("torch.backends.cudnn.allow_tf32", _UNREADABLE)
    elif ".mkldnn." in label:
        return "ieee"
    return "tf32" if flag is True else "ieee" if flag is False else "none"


_CPU = torch.device("cpu")


def _same_in_effect(label, a, b):
    """Whether two readings of all settings (label -> value) give `label` the same value in
    effect: an fp32_precision of "none" is its parent's, and at the top its backend's legacy
    flag's (allow_tf32 = False, which was already so, moves torch.backends.cuda.matmul's
    fp32_precision from "none" to "ieee": the same numerics)."""
    def effective(settings):
        row, value = label, settings.get(label, _UNREADABLE)
        if label == "torch.get_default_device()" and value is None:
            return _CPU  # no default device set: tensors are made on the CPU
        while _type(value) is _str and value == "none":
            row = _precision_parent(row)
            if row is None:
                return _legacy_precision(label, settings)
            value = settings.get(row, _UNREADABLE)
        return value
    return _same_value(effective(a), effective(b))


def _show(v):
    try:
        return _describe_value(v)
    except Exception:  # a candidate's object whose repr or attributes raise
        return "(%s)" % _a(type(v).__name__)


def _describe_value(v):
    if v is _ABSENT:
        return "(absent)"
    if v is _UNREADABLE:
        return "(unreadable)"
    if callable(v):
        name = getattr(v, "__qualname__", None) or type(v).__name__
        module = getattr(v, "__module__", None)
        return "%s.%s" % (module, name) if module else name
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _public(space):
    """The bindings of a namespace that a forward may reach: public and dunder names."""
    return {k: v for k, v in vars(space).items()
            if not k.startswith("_") or (k.startswith("__") and k.endswith("__"))}


def _is_code(v):
    return _callable(v) or _isinstance(v, _ModuleType)


def _bindings(space, code_only):
    """The bindings of a watched namespace: its public ones (_public); or, for one of torch's
    modules that its functions look up when they run (`code_only`), every one, private ones
    included, of which _Reach watches those bound to code (_is_code: functions, classes, modules:
    `F` in torch.nn.modules.linear, `_VF` in torch.nn.functional) before or after (a global that
    goes from None to a function is a change, and the reference gets its None back). Their other
    values (caches, flags, registries) are torch's own state, which its code changes as it
    runs."""
    if code_only:
        out = dict(vars(space))
    elif not _isinstance(space, _type):
        out = _public(space)
    else:
        # A class's private methods are its code too: nn.Module's _call_impl runs every layer's
        # forward, and a candidate that wrapped it (or Conv2d's _conv_forward) chose what every
        # layer of the reference returned. Its private data (counters, caches) is not watched.
        out = {k: v for k, v in vars(space).items()
               if not k.startswith("_") or (k.startswith("__") and k.endswith("__"))
               or _is_code(v)}
    # And the namespace's own class, which no dict of it holds: a module's class is looked up
    # before its dict (a candidate that set torch.__class__ to a ModuleType subclass with a
    # `softmax` property had the reference's torch.softmax sleep, and read 20x), a class's
    # metaclass runs its construction and its class attributes' lookup.
    out["__class__"] = _type(space)
    return out


def _bound_modules(namespaces, seen):
    """The modules bound in `namespaces` (each read with vars()), other than torch's, sys,
    builtins, kjudge's and this harness's, and other than those whose id is in `seen`, to which
    theirs are added; in the order found."""
    skip = {"sys", "builtins", "_kjudge", __name__}
    found = []
    for space in namespaces:
        for module in list(vars(space).values()):
            if not _isinstance(module, _ModuleType):
                continue
            name = getattr(module, "__name__", None)
            if (not _isinstance(name, str) or name in skip or name == "torch"
                    or name.startswith("torch.") or id(module) in seen):
                continue
            try:
                vars(module)
            except TypeError:
                continue
            seen.add(id(module))
            found.append(module)
    return found


def _problem_modules():
    """The modules, other than torch's, the problem's code reaches by name: those bound in its
    module (math, numpy, a helper beside it) and the modules bound in theirs (numpy.linalg,
    os.path). A candidate that rebound math.sqrt had the reference scale by what it chose, and
    its x.clone() was judged correct. sys and builtins are watched otherwise (_settings_table;
    builtins as a namespace of its own); this harness's and kjudge's modules are not the
    problem's."""
    if _problem is None:
        return []
    seen = set()
    first = _bound_modules([_problem], seen)
    return sorted(first + _bound_modules(first, seen), key=lambda m: m.__name__)


# The modules whose code bindings (_bindings(code_only)) are watched: what the reference's
# modules and functional calls run through. torch._C among them: nn.Module's call asks
# torch._C._get_tracing_state() whether a trace runs (a candidate that rebound it, and
# torch._C._is_tracing, sent every layer of the reference through the tracer's path, where its
# code doubled each layer's result, and its doubled softmax passed:
# examples/faulty/fakes_a_tracer.py).
_CODE_SPACES = ("torch.nn", "torch.functional", "torch._VF", "torch._C", "torch._C._nn",
                "torch._tensor")


def _by_torch(v):
    """Whether `v` is code from torch's own files (torch.compile's dynamo replaces a few of its
    functions with such wrappers; importing torch.nn.quantized's shims rebinds their parent's
    names to the torch.ao modules they stand for): reported as info, not as a warning."""
    if _isinstance(v, _ModuleType):
        path = getattr(v, "__file__", None)
    else:
        code = getattr(v, "__code__", None)
        path = code.co_filename if code is not None else None
    return _isinstance(path, str) and os.path.abspath(path).startswith(_TORCH_DIR)


def _mode_stacks():
    """torch's function modes other than set_default_device's, and its dispatch modes, by
    identity (([], []) in a torch without these accessors)."""
    c = torch._C
    if not all(hasattr(c, n) for n in ("_len_torch_function_stack", "_get_function_stack_at",
                                       "_len_torch_dispatch_stack", "_get_dispatch_stack_at")):
        return ([], [])
    device_context = getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)
    functions = [c._get_function_stack_at(i) for i in range(c._len_torch_function_stack())]
    dispatch = [c._get_dispatch_stack_at(i) for i in range(c._len_torch_dispatch_stack())]
    return ([id(m) for m in functions if m is not device_context], [id(m) for m in dispatch])


# sys.monitoring's events (Python 3.12+), one flag each, as register_callback takes them. In
# 3.14 BRANCH has no slot of its own: registering for it fills BRANCH_LEFT and BRANCH_RIGHT (a
# read of it would copy one into the other), so it is left out where those two exist.
_MONITORING = getattr(sys, "monitoring", None)
_MONITORING_NAMES = vars(_MONITORING.events) if _MONITORING is not None else {}
_MONITORING_EVENTS = sorted(
    v for n, v in _MONITORING_NAMES.items()
    if n.isupper() and isinstance(v, int) and v > 0 and v & (v - 1) == 0
    and not (n == "BRANCH" and "BRANCH_LEFT" in _MONITORING_NAMES))
_MONITORING_SLOTS = [(tool, event) for tool in range(6) for event in _MONITORING_EVENTS]


def _monitoring_state():
    """sys.monitoring (PEP 669, Python 3.12+) as it stands, () without it: each tool id's name
    and global events, which events any tool (also the profile and trace functions of every
    thread) has on, every callback (the objects: compared by identity, so no id is reused), and
    whether a callback was registered while this read ran. A freed tool id keeps its events and
    callbacks in 3.12 and 3.13, so all are read. Callbacks are read in two passes: the first
    takes every one out (register_callback returns the one it replaces; setting one changes no
    code's instrumentation), after which none can run, not even to move itself to a slot already
    read; the second puts them all back, and a slot found filled then was filled during the
    read."""
    if _MONITORING is None:
        return ()
    register = _MONITORING.register_callback
    taken, filled, failure = [], False, None
    try:
        for tool, event in _MONITORING_SLOTS:
            taken.append(register(tool, event, None))
        names = _tuple(_MONITORING.get_tool(tool) for tool in range(6))
        events = _tuple(_MONITORING.get_events(tool) for tool in range(6))
        every = _MONITORING._all_events() if hasattr(_MONITORING, "_all_events") else None
    except Exception as exc:  # a callback that raised (on a CALL event) while the first pass ran
        failure = exc
    finally:
        # A callback that raised right after a swap (on C_RETURN) took with it what the swap
        # returned: lost, on the way to the candidate's error, which ends the worker.
        for (tool, event), old in zip(_MONITORING_SLOTS, taken):
            try:
                filled = register(tool, event, old) is not None or filled
            except Exception as exc:  # one put back that raised on the next call
                failure = failure or exc
    if failure is not None:
        raise CandidateError("a sys.monitoring callback raised while kjudge read sys.monitoring:"
                             " %s" % _first_line(failure))
    return (names, events, every, _tuple(taken), filled)


def _same_monitoring(now, then):
    """Whether two _monitoring_state() readings agree (callbacks by identity: a callable's
    __eq__ could say anything)."""
    if now == () or then == ():
        return now == then
    return (now[:3] == then[:3] and not now[4] and not then[4]
            and all(a is b for a, b in zip(now[3], then[3])))


# torch's thread-local dispatcher state: the dispatch keys this thread adds to every call's and
# takes out of it, and whether __torch_function__ overrides run. Bound at load.
_DISPATCH_TLS = tuple(getattr(torch._C, n, None) for n in (
    "_dispatch_tls_local_include_set", "_dispatch_tls_local_exclude_set",
    "_is_torch_function_enabled", "_is_torch_function_all_disabled"))
# The key set's own repr as loaded: a candidate that replaced DispatchKeySet.__repr__ with one
# that left the Python dispatcher's key out had its wrong matmul read correct again, and ran its
# code at every switch.
_keyset_repr = getattr(getattr(torch._C, "DispatchKeySet", None), "__repr__", None)


_profiler_on = getattr(torch.autograd, "_profiler_enabled", None)
_tracing_state = getattr(torch._C, "_get_tracing_state", None)


def _dispatch_state():
    """torch's dispatcher state of this thread, as text (() in a torch without the accessors):
    a key a guard left included (the Python dispatcher's, torch._C._EnablePythonDispatcher) or
    excluded, and __torch_function__ turned off. A candidate that kept a guard of the Python
    dispatcher alive between its calls had every aten call of the reference's go through a
    Python kernel it had registered (OpOverload.py_impl): wrong values read correct, and the
    same values computed in float64 read 2.1x on the CPU."""
    if _keyset_repr is None or any(f is None for f in _DISPATCH_TLS):
        return ()
    include, exclude, enabled, all_disabled = _DISPATCH_TLS
    return (_key_names(include()), _key_names(exclude()), _bool(enabled()),
            _bool(all_disabled()))


def _key_names(keys):
    """A DispatchKeySet's keys by name ("DispatchKeySet(A, B)" read as ("A", "B"))."""
    text = _keyset_repr(keys)
    inner = text[text.find("(") + 1:text.rfind(")")]
    return _tuple(k.strip() for k in inner.split(",") if k.strip())


def _dispatch_change(now, then):
    """What differs between two _dispatch_state() readings, in words."""
    out = []
    for i, what in ((0, "included"), (1, "excluded")):
        added = [k for k in now[i] if k not in then[i]]
        gone = [k for k in then[i] if k not in now[i]]
        out += ["%s %s" % (k, what) for k in added]
        out += ["%s no longer %s" % (k, what) for k in gone]
    if now[2:] != then[2:]:
        out.append("__torch_function__ %s" % ("on" if now[2] and not now[3] else "off"))
    return ", ".join(out)


_eval_frame = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
_get_eval_frame_callback = getattr(_eval_frame, "get_eval_frame_callback", None)
_set_eval_frame = getattr(_eval_frame, "set_eval_frame", None)


def _frame_callback():
    """torch._dynamo's frame-evaluation callback on this thread, by identity (None: none, or
    no way to read it). One left in force runs at the entry of every Python frame the
    reference's calls make: a candidate's that doubled max_pool2d's input in place had its own
    doubled output read correct."""
    if _get_eval_frame_callback is not None:
        callback = _get_eval_frame_callback()
    elif _set_eval_frame is not None:
        callback = _set_eval_frame(None)
        _set_eval_frame(callback)
    else:
        return None
    return None if callback is None or callback is False else id(callback)


_listdir, _readlink = os.listdir, os.readlink
# A process the candidate starts whose parent ends before it (a child that forked a busy
# grandchild and exited) goes to the nearest child subreaper among its ancestors: the worker's
# guard or pool once, outside the processes _threads_cpu reads, and such a grandchild doing the
# reference's turns' work read 1.9x for the same matmul on the CPU, unflagged. The worker is one
# from _Reach.arm() on; the candidate turning it off is its error (_check_reference).
_child_subreaper, _set_child_subreaper = _kjudge.child_subreaper, _kjudge.set_child_subreaper


def _perf_events():
    """How many of the process's open files are perf events (perf_event_open). A candidate that
    opened a task-clock sampling event on each of torch's threads at import, enabled between its
    calls, had their interrupts land in the reference's (1.9-2.0x on the CPU). Counted at each
    check after the candidate's code (not at every switch: 50-150 us), on the CPU only (on the
    GPU, what CUPTI's work opens has not been looked at)."""
    try:
        names = _listdir("/proc/self/fd")
    except OSError:
        return 0
    count = 0
    for name in names:
        try:
            count += _readlink("/proc/self/fd/" + name) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return count


def _in_force():
    """What would run inside every call the reference makes: torch's mode stacks,
    sys.monitoring's tools, the dispatcher's state of this thread and dynamo's frame callback
    (the profile and trace hooks are checked on their own: none may be set at all)."""
    functions, dispatch = _mode_stacks()
    return (functions, dispatch, _monitoring_state(), _dispatch_state(), _frame_callback())


def _placed(v):
    """A tensor's size, strides, dtype, device and data pointer (_layout); None for anything
    else or where they cannot be read (a sparse tensor has no strides). A candidate that set the
    reference's Linear weight's .data to a view of the same values with other strides (the same
    Parameter object) had torch copy it before every GEMM of the reference's: 1.6x for the same
    GEMM on the CPU."""
    try:
        return _layout(v)
    except Exception:
        return None


def _model_fingerprint(model):
    """The reference model by identity: each module, its attributes, and the entries of its
    parameter, buffer, submodule and hook dicts, each with its class (a candidate that set the
    class of the reference's weight to a Parameter subclass whose __torch_function__ slept had
    the same object, with the same values, slow the reference's every call: 15x), and each
    tensor's place in memory (_placed)."""
    out = []
    for name, m in model.named_modules(remove_duplicate=False):
        attrs, dicts = [], []
        for k, v in vars(m).items():
            if isinstance(v, dict):
                dicts.append((k, tuple((kk, id(vv), id(_type(vv)), _placed(vv))
                                       for kk, vv in v.items())))
            else:
                attrs.append((k, id(v), id(_type(v)), _placed(v)))
        # Classes by identity (id): compared with ==, a metaclass's __eq__ could say anything.
        out.append((name, id(m), id(_type(m)), tuple(sorted(attrs)), tuple(sorted(dicts))))
    return out


def _classes_defined_in(mod_name, module):
    """(name, class) for each class module `mod_name` (None: none) defines, by name."""
    try:
        members = sorted(vars(module).items()) if module is not None else []
    except TypeError:
        return []
    return [(name, cls) for name, cls in members
            if isinstance(cls, type) and getattr(cls, "__module__", None) == mod_name]


class _Reach:
    """The reference's and the candidate's torch state, and the checks on the candidate's reach
    (see above). Armed for a Python candidate only: a native one runs no Python."""

    def __init__(self):
        self.armed = False
        self.table = []
        self.spaces = []           # (label, namespace, code_only: see _bindings)
        self.ref_settings = {}     # label -> value, the reference's
        self.ref_bindings = []     # per namespace: name -> value, the reference's
        self.cand_settings = {}    # label -> value: what the candidate changed
        self.overlay = {}          # (namespace index, name) -> value or _ABSENT: the same
        self.active = "reference"
        # (text, by torch's own code, (label, all settings as read) for a setting's change or
        # None), in the order found
        self.changes = []
        self.reported = 0
        self.held_changes = []  # setting changes new_changes() held back (see there)
        self.during_timing = []
        self.sealed = False        # both models built: `entered` is fixed from then on
        self.fingerprint = None    # the reference model's, once built
        self.entered = None        # what enter() saw: problem bindings, mode stacks, globals
        self.contents = None       # _problem_contents() as enter() or seal() saw it
        self.param_values = {}     # name -> the reference's parameter as its own run left it
        self.runs_adopted = 0      # the reference's untimed runs adopt_reference_run() saw
        self.churn = set()         # what the reference changes on every run (see there)
        self.threads = None        # Python threads running at seal()
        self.module_spaces = range(0)  # indices in `spaces` of the problem's modules
        self.modules = None        # sys.modules as enter() or seal() found it (_loaded_modules)
        self.perf_events = 0       # the process's perf events when armed (_perf_events)
        self.subreaper = False     # the worker made a child subreaper when armed

    def arm(self):
        self.armed = True
        _apply_allocator_tunables()
        _quiet_libraries()
        self.table = _settings_table()
        self.perf_events = _perf_events()
        # The worker a child subreaper from here on (_set_child_subreaper): a process the
        # candidate's children leave behind comes to it, where _threads_cpu counts it.
        self.subreaper = _set_child_subreaper(True)
        spaces = [("builtins", builtins, False), ("torch", torch, False),
                  ("torch.Tensor", torch.Tensor, False),
                  ("torch.nn.Module", torch.nn.Module, False)]
        # torch.random among them: torch.manual_seed looks up its `default_generator` as it
        # runs (in a problem's get_inputs() say); torch.jit and torch.overrides too, which
        # torch.nn.functional's code reads as it runs (a candidate that rebound
        # torch.jit.annotate gave the reference's F.max_pool2d a stride of its choosing, and its
        # one pooling window passed: examples/faulty/rebinds_jit_annotate.py).
        for name in ("linalg", "fft", "special", "cuda", "random", "jit", "overrides"):
            space = _under_torch(name)
            if space is not None:
                spaces.append(("torch." + name, space, False))
        # torch.backends and its modules, with the classes they define. Most of those modules
        # stand in sys.modules as an instance of a class of their own that wraps the module
        # (`m`): torch.backends.cudnn is a CudnnModule, whose property `enabled` F.layer_norm
        # reads on every call (a candidate that put a sleeping property on that class slowed
        # the reference's nn.LayerNorm 5-6x on the CPU, and one that returned a string there
        # had the problem blamed: examples/faulty/slows_reference_by_backend_property.py).
        taken = set()
        for mod_name, module in sorted(sys.modules.items()):
            if module is None or not (mod_name == "torch.backends"
                                      or mod_name.startswith("torch.backends.")):
                continue
            inner = vars(module).get("m")
            for label, space in ((mod_name, module), (mod_name + ".m", inner)):
                if not _isinstance(space, _ModuleType) or id(space) in taken:
                    continue
                taken.add(id(space))
                spaces.append((label, space, False))
                for name, cls in _classes_defined_in(mod_name, space):
                    if id(cls) not in taken:
                        taken.add(id(cls))
                        spaces.append((mod_name + "." + name, cls, False))
        # The classes of torch's grad-mode switches (torch.no_grad, torch.inference_mode, ...),
        # with their bases: their Python methods run inside every call of a forward that enters
        # one, and their attributes are not the names torch binds.
        for mod_name in ("torch.autograd.grad_mode", "torch.utils._contextlib"):
            for name, cls in _classes_defined_in(mod_name, sys.modules.get(mod_name)):
                spaces.append((mod_name + "." + name, cls, False))
        seen = {id(torch.nn.Module)}
        for name, cls in sorted(vars(torch.nn).items()):
            if (isinstance(cls, type) and issubclass(cls, torch.nn.Module)
                    and id(cls) not in seen):
                seen.add(id(cls))
                spaces.append(("torch.nn." + name, cls, False))
        # And the layers' private bases, which torch.nn does not export (_ConvNd, _BatchNorm,
        # _NormBase, ...): their methods run inside the exported layers' calls.
        for mod_name, module in sorted(sys.modules.items()):
            if not mod_name.startswith("torch.nn.modules."):
                continue
            for name, cls in _classes_defined_in(mod_name, module):
                if issubclass(cls, torch.nn.Module) and id(cls) not in seen:
                    seen.add(id(cls))
                    spaces.append((mod_name + "." + name, cls, False))
        # The modules the reference's layers run through, private names too (a candidate that
        # replaced torch.nn.modules.linear's `F` made every nn.Linear of the reference compute
        # what it chose), by their code bindings alone.
        torch_code = []
        for name, module in sorted(sys.modules.items()):
            if module is None or not (name in _CODE_SPACES or name.startswith("torch.nn.")):
                continue
            try:
                vars(module)
            except TypeError:
                continue
            spaces.append((name, module, True))
            torch_code.append(module)
        # The modules other than torch's that those bind (math, itertools, collections.abc,
        # warnings, ...), by their code bindings alone as torch's above (their data, such as
        # warnings.filters, is theirs to change): their functions run inside the reference's
        # layers as they are built and called (a candidate that rebound math.sqrt at its import
        # had kaiming_uniform_ build the reference's nn.Linear with zero weights, and its forward
        # that returned the bias alone passed at 946x; itertools.repeat makes a Conv2d's stride
        # and padding). The problem's own modules are watched as the problem's below.
        problem_modules = _problem_modules()
        own = {id(m) for m in problem_modules} | {id(space) for _, space, _ in spaces}
        spaces += [(m.__name__, m, True)
                   for m in sorted(_bound_modules(torch_code, own), key=lambda m: m.__name__)]
        first = len(spaces)
        spaces += [(m.__name__, m, False) for m in problem_modules]
        self.module_spaces = range(first, len(spaces))
        self.spaces = spaces

    def _settings(self):
        return {label: _read(get) for label, get, _ in self.table}

    def _apply(self, wanted):
        """Sets each setting in `wanted` (label -> value) that differs; twice when aliases
        interfere. Returns the labels that still differ."""
        for _ in range(2):
            missed = []
            for label, get, put in self.table:
                want = wanted.get(label, _UNREADABLE)
                if want is _UNREADABLE or _same_value(_read(get), want):
                    continue
                try:
                    put(want)
                except Exception:
                    pass
                missed.append(label)
            if not missed:
                return []
        return [label for label, get, _ in self.table
                if wanted.get(label, _UNREADABLE) is not _UNREADABLE
                and not _same_value(_read(get), wanted[label])]

    def _bind(self, key, value):
        space = self.spaces[key[0]][1]
        if key[1] == "__class__":
            # Through object's own slot: setattr would run the class in force, the candidate's
            # (whose __setattr__ ignored the write, and its doubled softmax read correct).
            _set_class(space, value)
            if _type(space) is not value:
                raise CandidateError("kjudge could not set the class of %s to %s"
                                     % (self.spaces[key[0]][0], _show(value)))
            return
        if value is _ABSENT:
            if key[1] in vars(space):
                delattr(space, key[1])
        else:
            setattr(space, key[1], value)

    def _bind_all(self, pairs, classes_first):
        """_bind of each (key, value) of `pairs`, a namespace's class first or last: the other
        bindings are set through the class that should be in force (the reference's, before its
        turn; the candidate's own are set through the class they were made under)."""
        for first in (True, False):
            for key, value in pairs:
                if (key[1] == "__class__") == (first == classes_first):
                    self._bind(key, value)

    def _binding_changes(self, expected):
        """(key, label, name, expected value, current value) for each binding of the namespaces
        that differs from `expected(key, reference's value)`; submodules (imports) and lazily
        created __annotations__ are not changes."""
        for i, (label, space, code_only) in enumerate(self.spaces):
            ref = self.ref_bindings[i]
            cur = _bindings(space, code_only)
            for name in set(ref) | set(cur):
                if ("space", i, name) in self.churn:
                    continue  # the reference changes it on every run (adopt_reference_run)
                key = (i, name)
                was = expected(key, ref.get(name, _ABSENT))
                value = cur.get(name, _ABSENT)
                if code_only and not (_is_code(was) or _is_code(value)):
                    continue  # torch's own data (see _bindings)
                # A module bound where there was none is an import (a submodule's, lazily).
                if (value is was or (was is _ABSENT and isinstance(value, types.ModuleType))
                        or _made_by_python(name, was, value)):
                    continue
                yield key, label, name, was, value

    def _note(self, text, by_torch=False, setting=None):
        self.changes.append((text, by_torch, setting))

    def use(self, side):
        """Puts `side`'s state in force (before a timed sample: prepare()). Back to the
        reference, a setting found changed that the candidate had not changed before is noted
        for the check after timing."""
        if not self.armed or side == self.active:
            return
        _apply_allocator_tunables()
        _quiet_libraries()
        if side == "candidate":
            self._adopt_reference_settings()
            _hold_gc(False)
            if self.cand_settings:
                self._apply(self.cand_settings)
            self._bind_all(list(self.overlay.items()), classes_first=False)
        else:
            # First: a pass from here on could run a finaliser of the candidate's after the
            # reference's settings are put back (they would then be taken for its own).
            _hold_gc(True)
            # The namespaces' classes first, before anything is read or set through them (a
            # class of the candidate's could intercept both).
            for key in self.overlay:
                if key[1] == "__class__":
                    self._bind(key, self.ref_bindings[key[0]]["__class__"])
            differ = False
            now = self._settings()
            for label, value in now.items():
                if value is _UNREADABLE:
                    # Not a change to report (an older flag that aliases a newer switch reads so
                    # once the switch is set: the switch shows the change, as in leave()), but
                    # the reference's settings are put back all the same: what cannot be set back
                    # and read as the reference's is raised below.
                    differ = True
                    continue
                was = self.ref_settings.get(label, _UNREADABLE)
                if _same_value(value, was):
                    continue
                differ = True
                if label in _QUIET_SETTINGS or _same_in_effect(label, now, self.ref_settings):
                    self.cand_settings[label] = value  # kept to the candidate's calls, unreported
                    continue
                if not (label in self.cand_settings
                        and _same_value(value, self.cand_settings[label])):
                    self.during_timing.append("%s: %s -> %s" % (label, _show(was), _show(value)))
            missed = self._apply(self.ref_settings) if differ else []
            for key in self.overlay:
                if key[1] != "__class__":
                    self._bind(key, self.ref_bindings[key[0]].get(key[1], _ABSENT))
            if missed:
                raise CandidateError("the candidate changed %s and kjudge could not set it back "
                                     "for the reference" % ", ".join(missed))
            # A hook or mode the candidate left behind would run inside the reference's calls
            # (its timed ones among them: say, one that slows them). The checks after the
            # candidate's checked calls and after timing would not see one that a timed call sets
            # and the next removes: checked before every turn of the reference instead.
            left = self._hooks_and_modes() if self.entered is not None else []
            if left:
                raise CandidateError("the candidate left %s active after its code ran: the "
                                     "reference would run under it" % "; ".join(left))
            # A profile or trace function set from C with no Python object
            # (PyEval_SetProfile(f, NULL) through ctypes) reads None above, and ran inside the
            # reference's calls (it doubled an input in place, and its wrong output read
            # correct; slept in each forward, 3x): none may be set, so none is left.
            _setprofile(None)
            _settrace(None)
        self.active = side

    def release(self, holder):
        """Frees holder[0], an output of the reference's, which code of the candidate's may hang
        on (a finalizer). Within the reference's turn, one that can run code when freed
        (_runs_code_when_freed) goes with the reference's own changes so far adopted first and
        the whole check of a switch to the reference at its next use() (settings compared, noted
        and put back; bindings; hooks and modes; the allocator's tunables)."""
        out, holder[0] = holder[0], None
        if self.armed and self.active == "reference" and _runs_code_when_freed(out):
            self._adopt_reference_settings()
            self.active = None
        del out

    def _adopt_reference_settings(self):
        """Leaving the reference's turn: only its own calls ran since use("reference") put its
        settings in force, so a setting that differs now is the reference's doing (a forward that
        flips torch.backends.cudnn.benchmark, or sets TF32 at the nominal shape), and the
        baseline its next turn is checked against, as adopt_reference_run() takes its other
        changes. Not where a Python thread started since seal() (the candidate's, say) could
        have made it: that change stays to be found at the reference's next turn."""
        if not self.sealed or self.threads is None or _active_threads() > self.threads:
            return
        for label, value in self._settings().items():
            if value is not _UNREADABLE and not _same_value(
                    value, self.ref_settings.get(label, _UNREADABLE)):
                self.ref_settings[label] = value

    def enter(self):
        """Before the candidate's code: the reference's state as it stands, then the
        candidate's put in force."""
        if not self.armed:
            return
        self.use("reference")
        self.ref_settings = self._settings()
        self.ref_bindings = [_bindings(space, code_only) for _, space, code_only in self.spaces]
        if not self.sealed:  # after seal(), the baseline stays the one seal() took
            problem = (_class_bindings(_problem) if _problem is not None else None)
            self.modules = _loaded_modules()
            self.entered = (problem, _in_force(), dict(globals()))
            self.contents = _problem_contents(problem)
        self.use("candidate")

    def leave(self):
        """After the candidate's code (also when it raised): what it changed is noted and kept
        for its next call, the reference's state restored, and the reference checked."""
        if not self.armed:
            return
        now = self._settings()
        for label, value in now.items():
            if value is _UNREADABLE:
                continue  # an alias of a newer switch, which shows the change
            expected = self.cand_settings.get(label, self.ref_settings.get(label, _UNREADABLE))
            if not _same_value(value, expected):
                self.cand_settings[label] = value
                # Quiet ones, and one the candidate's code put back as the reference has it (a
                # note of "2 -> 2" said nothing), or to what the reference's has in effect.
                if label in _QUIET_SETTINGS or _same_in_effect(label, now, self.ref_settings):
                    continue
                self._note("%s: %s -> %s" % (label, _show(self.ref_settings.get(label,
                                                                                _UNREADABLE)),
                                             _show(value)), setting=(label, now))
        for key, label, name, _, value in self._binding_changes(self.overlay.get):
            ref = self.ref_bindings[key[0]].get(name, _ABSENT)
            if value is ref:  # put back as the reference has it
                self.overlay.pop(key, None)
                continue
            self.overlay[key] = value
            what = ("removed" if value is _ABSENT else "added: " + _show(value)
                    if ref is _ABSENT else "replaced by " + _show(value))
            self._note("%s.%s %s" % (label, name, what), _by_torch(value))
        self.active = "candidate"
        self.use("reference")
        self._check_reference("code")

    def rebase_harness(self):
        """The harness's own bindings as they stand now are its baseline (after it rebound
        them itself: use_weights)."""
        if self.entered is not None:
            self.entered = (self.entered[0], self.entered[1], dict(globals()))

    def watch_reference(self):
        """The reference model just built: checked from here on (parameters against _params)."""
        if self.armed:
            self.fingerprint = _model_fingerprint(_ref)

    def adopt_reference_run(self):
        """After the reference's own untimed call in a trial: what that call changed of its own
        state (an attribute made on first use, such as a cached mask; a problem global it counts
        in; parameters its forward renormalises, as Embedding's max_norm does) is the new
        baseline, not the next candidate call's doing. Only the problem's bindings, the model's
        fingerprint and its parameter values: the mode stacks, hooks and this harness's globals
        stay as seal() took them."""
        if not (self.armed and self.sealed):
            return
        # What a run after the first still changes, the reference changes on every run (a call
        # counter, rows renormalised as new indices reach them): where both sides' runs
        # interleave (captures, timed calls, checks) nothing says whose change it was, and it is
        # left unchecked. What only the first run made (a lazy attribute) stays checked.
        later = self.runs_adopted > 0
        self.runs_adopted += 1
        problem = _class_bindings(_problem)
        if later:
            before = self.entered[0]
            self.churn.update(("binding", k) for k in set(before) | set(problem)
                              if problem.get(k, _ABSENT) is not before.get(k, _ABSENT))
        self.entered = (problem, self.entered[1], self.entered[2])
        contents = _problem_contents(problem)
        if contents is not None and self.contents is not None:
            if later:
                self.churn.update(("contents", k) for k in set(contents) | set(self.contents)
                                  if contents.get(k, _ABSENT) != self.contents.get(k, _ABSENT))
            self.contents = contents
        # The problem's modules likewise (a helper module beside it that counts its calls in a
        # global): their data bindings as the reference's run left them are the reference's.
        # Not code (a function or class the reference would rebind on every run is no pattern
        # of a problem's, and one bound there is what a candidate's finaliser or thread, run
        # during the reference's call, would leave), and not where a thread started since
        # seal() could have made the change.
        unthreaded = self.threads is not None and _active_threads() <= self.threads
        if unthreaded and self.modules is not None:
            self.modules = _loaded_modules()  # what its own run imported or let go of
        for i in self.module_spaces if unthreaded else ():
            if i >= len(self.ref_bindings):
                break
            ref, now = self.ref_bindings[i], _bindings(self.spaces[i][1], self.spaces[i][2])
            for name in set(ref) | set(now):
                was, value = ref.get(name, _ABSENT), now.get(name, _ABSENT)
                if value is was or _is_code(was) or _is_code(value):
                    continue
                if later:
                    self.churn.add(("space", i, name))
                if value is _ABSENT:
                    ref.pop(name, None)
                else:
                    ref[name] = value
        if self.fingerprint is not None:
            fingerprint = _model_fingerprint(_ref)
            if later and fingerprint != self.fingerprint:
                self.churn.add(("model",))
            self.fingerprint = fingerprint
            baseline = self._param_baseline()
            for name, p in _ref.named_parameters():
                if name in baseline and not _identical(p.detach(), baseline[name]):
                    self.param_values[name] = p.detach().clone()
                    if later:
                        self.churn.add(("param", name))

    def adopt_problem_call(self, before):
        """After a call of the problem's own functions (get_inputs): the bindings of the problem
        module that call made or changed (a warnings registry, a global set on first use) are
        the problem's, the new baseline, not the next candidate call's doing. `before`: the
        bindings just before the call. Only keys the call itself changed: one that differs from
        the baseline since earlier stays checked."""
        if before is None or self.entered is None or self.entered[0] is None:
            return
        before, contents_before = before
        after = _class_bindings(_problem)
        contents_after = _problem_contents(after)
        if self.contents is not None and contents_after is not None:
            for k in set(contents_before) | set(contents_after):
                if contents_after.get(k, _ABSENT) != contents_before.get(k, _ABSENT):
                    if k in contents_after:
                        self.contents[k] = contents_after[k]
                    else:
                        self.contents.pop(k, None)
        baseline = dict(self.entered[0])
        for k in set(before) | set(after):
            if after.get(k, _ABSENT) is not before.get(k, _ABSENT):
                if k in after:
                    baseline[k] = after[k]
                else:
                    baseline.pop(k, None)
        self.entered = (baseline, self.entered[1], self.entered[2])

    def _param_baseline(self):
        """name -> the values the reference's parameters must hold: as built, or as its own
        untimed runs left them (adopt_reference_run())."""
        baseline = dict(zip(_param_names, _params))
        baseline.update(self.param_values)
        return baseline

    def seal(self):
        """Both models built: this harness's bindings, the problem module's, torch's mode stacks
        and sys.monitoring's tools are final from here on (checked after each candidate call,
        at every turn of the reference and after timing)."""
        if self.armed:
            self.entered = (_class_bindings(_problem), _in_force(), dict(globals()))
            self.contents = _problem_contents(self.entered[0])
            self.threads = _active_threads()
            self.modules = _loaded_modules()
            self.sealed = True

    def _hooks_and_modes(self):
        """What runs inside every call the reference makes, left active since enter() or seal()
        took the baseline: the interpreter's profile or trace hook, an interval timer, torch's
        function and dispatch mode stacks, sys.monitoring's tools. Checked at every turn of the
        reference (about 40 us with sys.monitoring, a few reads without)."""
        found = []
        if sys.getprofile() is not None or sys.gettrace() is not None:
            found.append("the interpreter's profile or trace hook (sys.setprofile, sys.settrace)")
        # A timer's signal runs its handler inside whatever call is running: a candidate's
        # SIGALRM every 2 ms that slept inside the reference's calls read correct at 1.47x on the
        # CPU. kjudge runs none; the signal handlers are each side's own (_settings_table).
        running = [name for name, which in _ITIMERS if _getitimer(which) != (0.0, 0.0)]
        if running:
            found.append("an interval timer (signal.setitimer, signal.alarm: %s)"
                         % ", ".join(running))
        # Record functions of torch's profiler, or of the JIT's tracer, run around every op the
        # reference's calls make, and record them.
        if _profiler_on is not None and _profiler_on():
            found.append("torch's profiler (torch.profiler, torch.autograd.profiler)")
        if _tracing_state is not None and _tracing_state() is not None:
            found.append("torch.jit's tracer (torch.jit.trace)")
        stacks, now = self.entered[1], _in_force()
        if now[0] != stacks[0]:
            found.append("torch's function mode stack (a TorchFunctionMode left active)")
        if now[1] != stacks[1]:
            found.append("torch's dispatch mode stack (a TorchDispatchMode left active)")
        if now[4] != stacks[4]:
            found.append("a frame-evaluation callback (torch._C._dynamo.eval_frame."
                         "set_eval_frame)")
        if now[3] != stacks[3]:
            found.append("torch's dispatcher state of this thread (a guard left alive, as "
                         "torch._C._EnablePythonDispatcher's: %s)"
                         % _dispatch_change(now[3], stacks[3]))
        if now[2] and now[2][4]:
            found.append("sys.monitoring callbacks (one was registered while kjudge read them)")
        elif not _same_monitoring(now[2], stacks[2]):
            found.append("a sys.monitoring tool, its events or callbacks (sys.monitoring."
                         "use_tool_id, set_events, register_callback)")
        return found

    def _check_reference(self, when):
        """Raises CandidateError naming what the candidate's `when` ("code": the call just
        left; "timed calls") changed on the reference's side since enter() or seal() (or the
        reference's last untimed run, adopt_reference_run()). What the reference changes on
        every run of its own is not checked: its runs outside the trials (captures, timing,
        checks) interleave with the candidate's."""
        found = []
        if self.entered is not None:
            problem, stacks, harness = self.entered
            now = globals()
            found += ["kjudge_harness.%s" % k for k in set(harness) | set(now)
                      if now.get(k, _ABSENT) is not harness.get(k, _ABSENT)]
            if problem is not None:
                now = _class_bindings(_problem)
                found += ["the problem's %s" % k for k in set(problem) | set(now)
                          if now.get(k, _ABSENT) is not problem.get(k, _ABSENT)
                          and ("binding", k) not in self.churn]
                if self.contents is not None:
                    held = _problem_contents(now)
                    found += ["the contents of the problem's %s" % k
                              for k in set(self.contents) & set(held)
                              if held[k] != self.contents[k] and ("contents", k) not in self.churn]
            found += self._hooks_and_modes()
        if self.modules is not None:
            found += _modules_changed(self.modules)
        if self.subreaper and not _child_subreaper():
            found.append("the worker's child-subreaper flag (prctl PR_SET_CHILD_SUBREAPER): "
                         "without it a process its children leave behind goes uncounted")
        if DEVICE == "cpu" and _perf_events() > self.perf_events:
            found.append("perf events opened on the worker's threads (perf_event_open): their "
                         "sampling interrupts land in the reference's calls")
        if self.fingerprint is not None:
            if _model_fingerprint(_ref) != self.fingerprint:
                if ("model",) not in self.churn:
                    found.append("the reference model (a module, attribute, parameter, buffer "
                                 "or hook of it)")
            else:
                originals = self._param_baseline()
                for name, p in _ref.named_parameters():
                    if ("param", name) in self.churn:
                        continue
                    if name in originals and not _identical(p.detach(), originals[name]):
                        found.append("the values of the reference's parameter %s" % name)
        if found:
            raise CandidateError("the candidate's %s changed what the reference runs with: %s"
                                 % (when, "; ".join(sorted(found)[:8])))

    def after_timing(self):
        """After the timed samples: the reference's state back in force; a change to it made
        during timing is the candidate's error, unless it is torch's own code wrapping its
        functions (torch.compile's first compile, reached first at the nominal shape): noted
        and kept to the candidate's calls like any change found after its checked calls."""
        if not self.armed:
            return
        self.use("reference")
        changes = list(self._binding_changes(lambda _, ref: ref))
        for key, label, name, was, value in changes:
            if _by_torch(value):
                self.overlay[key] = value
                self._note("%s.%s replaced by %s" % (label, name, _show(value)), True)
            else:
                self.during_timing.append("%s.%s replaced by %s" % (label, name, _show(value)))
        self._bind_all([(key, was) for key, _, _, was, _ in changes], classes_first=True)
        if self.during_timing:
            changed, self.during_timing = self.during_timing, []
            raise CandidateError("the candidate changed torch's global state while it was timed "
                                 "(%s): the reference's samples may have run under it"
                                 % "; ".join(changed[:8]))
        self._check_reference("timed calls")
        self.adopt_reference_run()  # the timed reference runs' own changes, now checked

    def new_changes(self):
        """The changes noted since the last call: (text, by torch's own code). A setting the
        reference's own calls have since set as the candidate did (an exact copy of a forward
        that sets torch.backends.cudnn.benchmark: the candidate's runs first) is the reference's
        doing too: not listed, but held and looked at again at the next call (the reference's
        later calls may set it otherwise, in timing say, and the candidate's change then
        stands)."""
        pending = self.held_changes + self.changes[self.reported:]
        self.reported = len(self.changes)
        self.held_changes, out = [], []
        for text, by_torch, setting in pending:
            if setting is not None and _same_in_effect(setting[0], setting[1], self.ref_settings):
                self.held_changes.append((text, by_torch, setting))
            else:
                out.append((text, by_torch))
        return out


def _made_by_python(name, was, value):
    """Python creates an empty __annotations__ in a class's dict when asked for it
    (torch.jit.script does), and the warnings module a module's __warningregistry__ when code
    of that module warns (torch.overrides' under torch.compile): not changes. Code that reads a
    module's __warningregistry__ is the warnings module's alone."""
    return ((name == "__annotations__" and was is _ABSENT and value == {})
            or name == "__warningregistry__")


def _class_bindings(module):
    """A module's bindings, and those of the classes it defines, by identity; with the module's
    class and theirs (their metaclasses), which their dicts do not hold: a candidate that gave
    the problem's module a class with a `Model` property had kjudge build the reference it chose
    (and its wrong function read correct), one with a KJUDGE_ATOL property chose the tolerance."""
    out = {"__class__": _type(module)}
    for k, v in vars(module).items():
        out[k] = v
        if isinstance(v, type) and v.__module__ == module.__name__:
            out["%s.__class__" % k] = _type(v)
            for kk, vv in vars(v).items():
                out["%s.%s" % (k, kk)] = vv
    return out


_float_hex, _repr = float.hex, repr
_CONTAINERS = (list, tuple, dict, set, frozenset, bytearray)
_CONTENT_LIMIT = 100000  # items read per binding and check at most


def _exact(t, types):
    """Whether the type `t` is one of `types`, by identity (`in` would run a metaclass's
    __eq__)."""
    for k in types:
        if t is k:
            return True
    return False


def _contents_key(v, budget, depth=0):
    """What a container of plain values bound in the problem holds, for an exact comparison
    later: nested lists, tuples, dicts, sets and bytearrays of ints, floats (by their bits: NaN
    equals itself), strings, bytes, booleans and None, each known by its exact type (compared by
    identity) and read through that type's own methods: no subclass's or other object's code is
    ever run, and such an item stands for itself, by identity (its own changes are not seen).
    `budget` ([items left]) bounds the work: a container larger than what is left, or nested
    deeper than 32, stands for itself by identity too."""
    t = _type(v)
    if t is float:
        return ("float", _float_hex(v))
    if t is int or t is bool or t is str or t is bytes or v is None:
        return v
    if not _exact(t, _CONTAINERS):
        return ("object", id(v))
    n = _len(v)
    if n > budget[0] or depth > 32:
        return ("cut", id(v))
    budget[0] -= n
    if t is bytearray:
        return ("bytearray", _bytes(v))
    if t is dict:
        return ("dict", _tuple((_contents_key(k, budget, depth + 1),
                                _contents_key(x, budget, depth + 1)) for k, x in _dict_items(v)))
    name = t.__name__
    if t is set or t is frozenset:
        # An exact set's iteration runs no item's code; its order is not its contents: the keys
        # (plain values and tuples of them, whose repr runs nothing of anyone's) sorted by repr.
        keys = [_contents_key(x, budget, depth + 1) for x in _list(v)]
        return (name, _tuple(_sorted(keys, key=_repr)))
    return (name, _tuple(_contents_key(x, budget, depth + 1) for x in _list(v)))


def _problem_contents(bindings=None):
    """_contents_key() of each container the problem module binds, and of those its classes
    bind, each read within a budget of its own: a candidate that emptied the problem's
    `hidden_sizes` list in place (the binding the same list) had the reference built as one
    Linear layer, and its single Linear passed. Containers only: a binding's identity is
    checked otherwise (_class_bindings; `bindings`: what it gave just now, else read here)."""
    if _problem is None:
        return None
    out = {}
    for name, v in (bindings if bindings is not None else _class_bindings(_problem)).items():
        last = name.rsplit(".", 1)[-1]
        if _exact(_type(v), _CONTAINERS) and not (last.startswith("__") and last.endswith("__")):
            out[name] = _contents_key(v, [_CONTENT_LIMIT])
    return out


# The interpreter's module registry, as the import system uses it (rebinding the name sys.modules
# does not change that dict).
_sys_modules = sys.modules
# The class of an object set through object's own slot (_Reach._bind), past its class's
# __setattr__ and any __class__ property of it.
_set_class = object.__dict__["__class__"].__set__


def _loaded_modules():
    """sys.modules' entries that hold a module (not the None an import leaves to block one)."""
    return {k: v for k, v in _sys_modules.items() if v is not None}


def _modules_changed(then):
    """The entries of sys.modules, of those `then` (_loaded_modules) held, that are gone or now
    hold something else: an import of them fails or gets that from then on. A candidate that set
    every torch entry to None had torch.manual_seed's `import torch.cuda` fail in kjudge's
    seeding before the next trial's get_inputs(), which read as the problem's error. A module
    put in place of another is not a change: torch's inductor puts the module of code it
    generated again in place of the one loaded before (the same code), and a lazy module is
    swapped for the real one; a module bound in place of one that the reference's code reaches
    does not change the names its code bound already."""
    found = []
    for name, module in then.items():
        now = _sys_modules.get(name, _ABSENT)
        if now is module or _isinstance(now, _ModuleType):
            continue
        found.append("%r %s" % (name, "removed" if now is _ABSENT else "now " + _show(now)))
    if not found:
        return []
    found.sort()
    more = " and %d more" % (_len(found) - 3) if _len(found) > 3 else ""
    return ["sys.modules (%s%s)" % (", ".join(found[:3]), more)]


_reach = _Reach()


def _drop_as_candidate(drop):
    """drop(), which lets go of objects the candidate's code could reach (its inputs and outputs,
    the pristine copies this module holds, which it can find through sys.modules), as the
    candidate's code: a finaliser it hung on one runs under its state, and what that changes is
    its change. Dropped while the reference's state was in force, a finaliser on the pristine
    inputs that rebound torch.matmul to zeros became the reference's baseline, and a candidate
    returning zeros read correct; one that set torch.set_num_threads(1) read 1.8x."""
    if _candidate is None or not _reach.armed:
        drop()
        return
    _blamed_on_candidate(lambda: _as_candidate(drop),
                         "a finaliser of the candidate's, run as kjudge freed its trial objects, "
                         "failed")


def _as_candidate(fn):
    """fn() (the candidate's code) under the candidate's state; see _Reach. When fn raised, its
    error is the one reported (a sticky CUDA error it left would fail the checks after it too);
    otherwise a check that cannot run after it is the candidate's error."""
    _reach.enter()
    try:
        out = fn()
    except BaseException:
        try:
            _reach.leave()
        except BaseException:
            pass
        raise
    _blamed_on_candidate(_reach.leave, "after the candidate's code ran, kjudge could not check "
                         "what it changed")
    return out


_listdir = os.listdir
# On the CPU, the worker's threads (native ids) as the candidate's code was about to run:
# torch's own, started then (_start_cpu_threads), and kjudge's. None on a GPU.
_own_threads = None


def _task_ids():
    """The native ids of the worker's threads, from /proc/self/task (empty where unreadable)."""
    try:
        return {int(t) for t in _listdir("/proc/self/task")}
    except Exception:
        return set()


def _note_own_threads():
    """Before the candidate's code first runs, on the CPU: the threads there are then are not
    its (_threads_cpu). On a GPU, where the device figure stands whatever the host does and the
    CUDA and CUPTI libraries start threads of their own as they are used, not taken."""
    global _own_threads
    if DEVICE == "cpu":
        _own_threads = _task_ids()


def _threads_cpu():
    """{(native thread or process id, start time in clock ticks): (name, CPU seconds used so
    far, "thread" or "process")} for every Python thread but this one (the worker's, which runs
    both sides' forwards), from /proc/self/task/<tid>/stat, and for every process those threads
    and this one started, and theirs in turn (from /proc's children lists; all of a process's
    threads count). A thread's attributes are read through threading.Thread's own getters, bound
    at load, so that a subclass's properties (the candidate's code) do not run here; an entry
    that cannot be read is left out. On the CPU, also every thread of the worker started since
    the candidate's code first ran that Python's registry does not hold (one started with
    _thread.start_new_thread, a native extension's: a candidate's two _thread hashers, parked
    while its own forward ran, read 4.0x for the same softmax, unflagged by this check), and the
    children they start. On a GPU such threads are not seen (_note_own_threads); nor, anywhere,
    is a process that ends between two reads."""
    out = {}
    me = _this_thread()
    # The tids whose children lists are read: this thread's and the others'. This one's as the
    # kernel gives it now: a worker forked from the pool keeps the pool's main-thread id in
    # threading's record of it.
    parents = [_get_native_id()]
    if _getpid() not in parents:  # the thread the worker's adopted processes come to
        parents.append(_getpid())
    for t in _all_threads():
        try:
            tid = _thread_native_id(t)
            if tid is None or _thread_ident(t) == me:
                continue
            _, start, cpu = _stat("/proc/self/task/%d/stat" % tid)
            out[(int(tid), start)] = (_str(_thread_name(t)), cpu, "thread")
            parents.append(int(tid))
        except Exception:
            continue
    if _own_threads is not None:
        known = set(parents)
        process_name = None  # read at the first thread outside the registry
        for tid in _task_ids():
            if tid in _own_threads or tid in known:
                continue
            try:
                name, start, cpu = _stat("/proc/self/task/%d/stat" % tid)
                # A native thread no one named has the process's name, kjudge's: named so, an
                # OpenBLAS pool's (which spins after each call) read as kjudge's own thread.
                if process_name is None:
                    process_name = _stat("/proc/self/stat")[0]
                out[(tid, start)] = ("%s, outside Python's registry" % name
                                     if name != process_name
                                     else "a native thread outside Python's registry, unnamed "
                                     "(a native library's: a BLAS thread pool, say)", cpu, "thread")
                parents.append(tid)
            except Exception:
                continue
    pending = [("/proc/self/task/%d/children" % tid) for tid in parents]
    seen = set()
    while pending and _len(seen) < 4096:
        try:
            with _open(pending.pop()) as f:
                pids = [int(p) for p in f.read().split()]
        except Exception:
            continue
        for pid in pids:
            if pid in seen:
                continue
            seen.add(pid)
            try:
                name, start, cpu = _stat("/proc/%d/stat" % pid)
                out[(pid, start)] = (name, cpu, "process")
                pending.append("/proc/%d/task/%d/children" % (pid, pid))
            except Exception:
                continue
    return out


def _stat(path):
    """(command name, start time in clock ticks, CPU seconds used, user and system) of a
    thread's or process's /proc stat file (the name may hold spaces and ')')."""
    with _open(path) as f:
        head, rest = f.read().rsplit(")", 1)
    fields = rest.split()  # from the state on: utime, stime, starttime are fields 14, 15, 22
    return (head.split("(", 1)[1], int(fields[19]),
            (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS)


# While both sides are timed (thread_turns_begin .. thread_turns_end): whose turn it is (the side
# whose prepare() or refresh() came last), since when, the threads' CPU then, and per side the
# wall time of its turns and each thread's CPU during them. Per side, because a thread busy
# during the candidate's own turns (its pool, say, working for its forwards) only competes with
# the candidate, while one busy during the reference's turns slows the reference alone.
_turns = {}
_monotonic = time.monotonic
_open = open
_get_native_id, _getpid = threading.get_native_id, os.getpid
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def thread_turns_begin():
    _turns.clear()
    _turns.update(side=None, at=_monotonic(), cpu=_threads_cpu(),
                  wall={"reference": 0.0, "candidate": 0.0},
                  used={"reference": {}, "candidate": {}})


def _book_cpu(before, now, used):
    """Adds each thread's or process's CPU between two _threads_cpu() readings to `used` (the
    same keys: (name, CPU seconds, kind)); one that started between them counts from 0.
    Returns the CPU seconds added."""
    total = 0.0
    for key, (name, c, kind) in now.items():
        d = c - before.get(key, (name, 0.0, kind))[1]
        if d > 0:
            total += d
            used[key] = (name, used.get(key, (name, 0.0, kind))[1] + d, kind)
    return total


def _close_turn():
    """Books the time and the threads' CPU since the last switch to the side whose turn it was."""
    now, cpu = _monotonic(), _threads_cpu()
    side = _turns["side"]
    if side is not None:
        _turns["wall"][side] += now - _turns["at"]
        _book_cpu(_turns["cpu"], cpu, _turns["used"][side])
    _turns["at"], _turns["cpu"] = now, cpu


def _turn_of(which):
    """prepare()'s and refresh()'s note that `which` takes a sample: a switch of sides closes the
    other's turn."""
    if _turns and _turns["side"] != which:
        _close_turn()
        _turns["side"] = which


def thread_turns_end():
    """{side: (wall seconds of its turns, [(name, native thread or process id, CPU seconds in
    them, whether it is a process)])} since thread_turns_begin; the accounting stops. A thread
    or process that ended before a switch of sides is counted up to the last switch it lived
    through."""
    if not _turns:
        return {}
    _close_turn()
    out = {side: (_turns["wall"][side],
                  [(name, tid, cpu, kind == "process")
                   for (tid, _), (name, cpu, kind) in _turns["used"][side].items()])
           for side in ("reference", "candidate")}
    _turns.clear()
    return out


_sleep = time.sleep


def background_quiet(max_s, window_s):
    """Before the timing loop: waits while the Python threads besides this one, and the processes
    the worker's threads started (_threads_cpu()'s), use more than one clock tick of CPU in a
    window of window_s, for at most max_s (a torch.compile candidate's compile workers start in
    the background and import torch: seconds of CPU that would run beside the samples). Returns
    (windows waited, seconds waited, whether they went quiet, [(name, native thread or process
    id, CPU seconds used over the wait, whether it is a process)] of those that used any, those
    that ended during it included). With nothing to watch, returns at once (0 windows).
    time.sleep lets go of the GIL, so Python threads can finish."""
    start = _monotonic()
    before = _threads_cpu()
    used_by = {}  # over the whole wait, as _book_cpu keeps it
    windows = 0
    quiet = True
    while before:
        _sleep(window_s)
        windows += 1
        now = _threads_cpu()
        used = _book_cpu(before, now, used_by)
        before = now
        # CPU times are whole clock ticks (as floats of seconds): at most one tick is quiet.
        if used * _CLOCK_TICKS < 1.5:
            break
        if _monotonic() - start >= max_s:
            quiet = False
            break
    busy = [(name, key[0], c, kind == "process") for key, (name, c, kind) in used_by.items()]
    return (windows, _monotonic() - start, quiet, busy)


def candidate_changes(after_timing):
    """[(text, by_torch)] of the candidate's changes to torch's state noted since the last call.
    after_timing: the timed samples are over (see _Reach.after_timing)."""
    if after_timing:
        _reach.after_timing()
    return _reach.new_changes()


# --- correctness trials -------------------------------------------------------------------------

def trial_begin(seed, scale):
    """The trial's inputs. For a native candidate, one copy per side, and the reference runs here
    (its output buffers take the reference's shapes). For a Python candidate, only the
    candidate's copy and a pristine one: trial_run_reference draws the reference's inputs again
    after the candidate ran, so nothing the candidate's code did to objects it could reach (the
    reference's inputs or outputs among them) reaches the reference."""
    _drop_as_candidate(_trial.clear)
    _check_limits()
    _next_poison()
    inputs = _make_inputs(seed, seed, scale)
    info = _input_info(inputs)
    _trial["pristine"] = inputs
    if _candidate is not None:  # read by trial_run_reference only
        _trial["pristine_digest"] = [_digest(x) for x in inputs]
    _trial["shapes"] = info["shapes"]
    _trial["cand_in"] = _trial_copies(inputs, "candidate")
    _trial["cand_ms"] = 0.0
    if _candidate is None:
        # On the host before the native candidate runs (and in C++ at once): a stray write of
        # its kernels cannot reach the outputs it is compared with.
        info["reference_outputs"] = _run_reference(_trial_copies(inputs, "reference"))
    return info


def trial_run_reference(seed, scale):
    """After a Python candidate: the reference on the trial's inputs drawn again (seed, scale as
    trial_begin had them). They must equal the pristine copy: if that copy no longer holds what
    trial_begin drew (its digest), the candidate changed it; if it does, get_inputs() is not
    reproducible under a seed (a problem whose first call draws more, such as a constant it makes
    once, included)."""
    _check_limits()
    again = _make_inputs(seed, seed, scale)
    if not _same_draw(again):
        if [_digest(x) for x in _trial["pristine"]] != _trial["pristine_digest"]:
            raise CandidateError("the candidate changed kjudge's pristine copy of the trial's "
                                 "inputs")
        raise _inputs_not_reproducible()
    _drop_as_candidate(lambda: _trial.__setitem__("pristine", again))
    return _run_reference(_trial_copies(again, "reference"))


def trial_inputs_again(seed, scale):
    """With no candidate loaded (the worker's check of a problem error), after trial_begin ran
    the reference: the trial's inputs drawn again, which must equal the first draw, as
    trial_run_reference requires after a Python candidate."""
    if not _same_draw(_make_inputs(seed, seed, scale)):
        raise _inputs_not_reproducible()


def _same_draw(again):
    """Whether inputs drawn again equal the trial's first draw (_trial["pristine"])."""
    first = _trial["pristine"]
    return len(again) == len(first) and all(_identical(a, b) for a, b in zip(again, first))


def _inputs_not_reproducible():
    return ProblemError("get_inputs() gave different values for the same seed (trial inputs %s): "
                        "kjudge draws each side's inputs from the seed and needs them "
                        "reproducible (use torch's random functions)" % (_trial["shapes"],))


def trial_reference_again(seed, scale):
    """After a trial whose candidate failed: the reference once more on the trial's inputs drawn
    again (seed, scale as trial_begin had them, the generator where its first run had it),
    returned as trial_finish returns a native candidate's outputs: ({...}, host copies, their
    descriptions); C++ compares them with the first run's, which it holds. Where the two differ,
    the problem's outputs are not a function of its inputs (a draw it does not seed, state it
    keeps between calls, memory it leaves uninitialised), and no candidate can match them
    reliably."""
    _check_limits()
    drawn = _make_inputs(seed, seed, scale)
    _drop_as_candidate(lambda: _trial.__setitem__("pristine", drawn))
    hosts, described = _run_reference(_trial_copies(drawn, "reference"))
    times = {"inputs_modified": [], "reference_ms": _trial["ref_ms"],
             "candidate_ms": _trial["ref_ms"]}
    return times, hosts, described


def _identical(a, b):
    """Whether two draws of an input hold the same thing, bit for bit (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if not isinstance(a, torch.Tensor):
        return a == b or (a != a and b != b)
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if _equal(a, b):
        return True
    return (a.is_floating_point() or a.is_complex()) and bool(
        ((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def _run_reference(ref_in):
    _trial["ref_in"] = ref_in  # what it changes in place: trial_finish
    try:
        start = time.perf_counter()
        with _NoGrad():
            out = _ref(*ref_in)
        synchronize()
        _trial["ref_ms"] = (time.perf_counter() - start) * 1e3
    except BaseException as exc:
        raise ProblemError("the reference Model failed on trial inputs %s:\n%s"
                           % (_trial["shapes"], _format_exception(exc)))
    _reach.adopt_reference_run()
    _trial["ref_numbers"] = []
    outs = _normalise(out, "Model.forward", ProblemError, _trial["ref_numbers"])
    # Copied to the host before kjudge's state holds the outputs, and by C++ as this returns
    # (session::trial_run_reference): a thread of the candidate's that waited for them there
    # (to copy them over the candidate's own, or to zero them) finds only what is no longer
    # compared. Returns (host copies, their descriptions).
    hosts = _hosts(outs, ProblemError, "the reference's")
    _trial["ref_out"] = outs
    return hosts, _described_outputs(hosts, _trial["ref_numbers"])


def _plain_hosts(hosts, who):
    """The candidate's host copies, checked outside its code: each a plain torch.Tensor in host
    memory (a subclass's methods would be the candidate's code running after the reference)."""
    for i, h in enumerate(hosts):
        if type(h) is not torch.Tensor:
            raise CandidateError("%s output %d came back as %s, not a plain torch.Tensor: "
                                 "kjudge judges plain tensors" % (who, i, _a(type(h).__name__)))
        if h.device.type != "cpu":
            raise CandidateError("%s output %d was not copied to the host" % (who, i))
    return hosts


def _candidate_list(out, who, numbers=None):
    """A candidate's outputs as _normalise gives them, its tensor subclasses refused before any
    tensor method (a layout's getter, which a subclass's __torch_function__ answers) is called."""
    return _judgeable(_plain_tensors(_output_list(out, who, CandidateError, numbers), who), who,
                      CandidateError)


def _plain_tensors(outs, who):
    """The candidate's outputs as _normalise gave them, each a plain tensor or an nn.Parameter:
    the timing loop's audits read no other tensor class (_audit_outputs), so a trial does not
    either, and a candidate is judged alike with and without timing."""
    for i, t in _enumerate(outs):
        kind = _type(t)
        if kind is not _Tensor and kind is not _Parameter:
            raise CandidateError("%s output %d is %s, a subclass of torch.Tensor: kjudge judges "
                                 "a candidate's plain tensors (and nn.Parameter) only, whose "
                                 "values it reads without running the candidate's code"
                                 % (who, i, _a_type(kind)))
    return outs


def _candidate_outputs(call, who):
    """call() (the candidate's forward, or its graph's replay), synchronised, its outputs copied
    to the host, all under the candidate's state; returns (host copies, ms)."""
    def timed_call():
        start = time.perf_counter()
        with _NoGrad():
            out = call()
        synchronize()
        return out, (time.perf_counter() - start) * 1e3

    def run():
        out, ms = _blamed_on_candidate(timed_call, "%s raised" % who)
        _trial["cand_numbers"] = []
        outs = _candidate_list(out, who, _trial["cand_numbers"])
        _trial["cand_devices"] = [t.device.type for t in outs]
        return _hosts(outs, CandidateError, "the candidate's", reached=True), ms

    hosts, ms = _as_candidate(run)
    return _plain_hosts(hosts, who), ms


def _check_output_devices():
    """A Python candidate's outputs must be where the reference's are: one computed or copied to
    the host while the reference's stay on the GPU is not the function judged (and KernelBench's
    comparison of the two raises)."""
    for i, (r, c) in enumerate(zip(_trial["ref_out"], _trial.get("cand_devices", []))):
        if r.device.type != "cpu" and r.device.type != c:
            raise CandidateError("ModelNew.forward output %d is on the %s, the reference's on the "
                                 "%s: kjudge compares outputs where the reference leaves them"
                                 % (i, c, r.device.type))


def trial_run_candidate():
    """The Python candidate on its copy of the trial's inputs: (host copies of its outputs, their
    descriptions), which C++ copies as this returns, before the reference runs, and compares
    where it holds them (nothing of the candidate's can reach them there)."""
    hosts, _trial["cand_ms"] = _candidate_outputs(
        lambda: _cand(*_trial["cand_in"]), "ModelNew.forward")
    return hosts, _described_outputs(hosts, _trial["cand_numbers"])


def trial_native_inputs():
    _trial["native_in"] = [_as_tensor_input(x) for x in _trial["cand_in"]]
    return [_describe(t, "input%d" % i) for i, t in enumerate(_trial["native_in"])]


def trial_native_outputs():
    _trial["cand_out"] = [_poisoned_like(t) for t in _trial["ref_out"]]
    return [_describe(t, "output%d" % i) for i, t in enumerate(_trial["cand_out"])]


def allocator_memory(reset_peak):
    """(allocated, peak allocated since the last reset, reserved, allocated ever: the bytes of
    every allocation since torch started) bytes of torch's caching allocator on the current
    device; zeros on the CPU. reset_peak: reset the peak first."""
    if DEVICE != "cuda":
        return (0, 0, 0, 0)
    if reset_peak:
        torch.cuda.reset_peak_memory_stats()
    ever = torch.cuda.memory_stats().get("allocated_bytes.all.allocated", 0)
    return (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(),
            torch.cuda.memory_reserved(), ever)


def synchronize_candidate():
    try:
        synchronize()
    except BaseException as exc:
        raise CandidateError("the device reported an error after the candidate ran:\n%s"
                             % _format_exception(exc))


def _same(a, b):
    """Whether input `a` still equals its pristine copy `b` (NaN where the copy has NaN counts as
    unchanged). One that changed device, layout or anything torch cannot compare counts as
    modified."""
    if type(a) is not type(b) and (isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor)):
        return False  # a tensor put in a copy's place, or a subclass: torch is not called on it
    if type(a) is torch.Tensor:
        try:
            return _identical(a, b)  # equal values (torch.equal: -0.0 equals 0.0), NaN equal NaN
        except BaseException:
            return False
    return True


def _hosts(outs, error_type, whose, reached=False):
    """Host copies of one side's outputs (_host, reached as there); a failure is that side's
    error."""
    try:
        return [_host(t, reached) for t in outs]
    except BaseException as exc:
        raise error_type("copying %s outputs failed:\n%s" % (whose, _format_exception(exc)))


def _described_outputs(hosts, numbers):
    """_describe of each output, with "number", what it was, where a number was returned (its
    dtype mismatch then says which Python type was compared as float64 or int64)."""
    out = []
    for i, t in enumerate(hosts):
        d = _describe(t)
        if i < len(numbers) and numbers[i]:
            d["number"] = numbers[i]
        out.append(d)
    return out


def trial_finish():
    modified = [i for i, (a, b) in enumerate(zip(_trial["cand_in"], _trial["pristine"]))
                if not _same(a, b)]
    # A native candidate got contiguous copies of the inputs that were not contiguous: a write
    # into one shows there, not in cand_in.
    for i, (a, c, b) in enumerate(zip(_trial.get("native_in", ()), _trial["cand_in"],
                                      _trial["pristine"])):
        if (i not in modified and type(b) is torch.Tensor and a is not c
                and not _same(a, b.contiguous())):
            modified.append(i)
    modified.sort()
    # The reference's own in-place changes (an inplace ReLU): a candidate that makes the same
    # ones does what the reference does.
    ref_in = _trial.get("ref_in", ())
    ref_modified = [i for i, (a, b) in enumerate(zip(ref_in, _trial["pristine"]))
                    if not _same(a, b)]
    # ... and left them holding what the reference left there (not another value).
    as_reference = [i for i in modified if i in ref_modified
                    and _same(_trial["cand_in"][i], ref_in[i])]
    # Returns ({...}, host copies, their descriptions): a native candidate's outputs, which C++
    # copies at once; a Python candidate's are in C++ already (trial_run_candidate).
    hosts = described = None
    if _candidate is not None:
        _check_output_devices()
    else:
        hosts = _hosts(_trial["cand_out"], CandidateError, "the candidate's")
        described = _described_outputs(hosts, ())
    return {
        "inputs_modified": modified,
        "reference_inputs_modified": ref_modified,
        "inputs_modified_as_reference": as_reference,
        "reference_ms": _trial["ref_ms"],
        "candidate_ms": _trial["cand_ms"],
    }, hosts, described


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


def _distinct_bytes(tensors):
    """The fewest bytes the tensors' elements can occupy: a view returned twice counts once, and
    an expanded one (stride 0) counts the elements its strides reach, not its logical size (both
    were counted whole, so a floor on the bytes moved could call an honest kernel impossible)."""
    seen, total = set(), 0
    for x in tensors:
        if not isinstance(x, torch.Tensor) or x.numel() == 0:
            continue
        key = (x.data_ptr(), tuple(x.shape), tuple(x.stride()), x.dtype)
        if key in seen:
            continue
        seen.add(key)
        reach = _strided_reach(x.shape, x.stride())
        total += min(x.numel(), reach) * x.element_size()
    return total


def _contiguous_clone(x):
    return x.clone(memory_format=torch.contiguous_format) if isinstance(x, torch.Tensor) else x


def _timing_clone(x, side):
    """A timing copy of input x for `side`: in the layout the problem made it (a channels-last or
    transposed input stays one, as in the trials), but contiguous for a native candidate, whose
    ABI takes row-major tensors."""
    if side == "candidate" and _candidate is None:
        return _contiguous_clone(x)
    return x.clone(memory_format=torch.preserve_format) if isinstance(x, torch.Tensor) else x


def timing_setup(max_sets, data_seed, byte_budget, native_per_set):
    """Input sets at the problem's nominal sizes (no jitter) with different data: as many as fit
    in byte_budget, at least 2 and at most max_sets. A set costs its pristine base and one
    working copy per side, twice the reference's outputs (what each side's CUDA graph of the
    set keeps) and a native candidate's own copies of its parameters and outputs, where it gets
    them. native_per_set: a native candidate's parameters and outputs may be copied per set
    (cold timing only: warm, the copies would leave L2 where the reference's one copy stays).
    The timed samples' generator seeds and input factors derive from a secret of the
    orchestrator's, which kjudge's C++ keeps (_keyed)."""
    _reach.use("reference")
    _turns.clear()  # a timing loop that raised left its booking on

    def drop():
        # The last trial's inputs, outputs and their host copies: timing needs none of them,
        # and with them the timing's sets came on top (a 500 MB ReLU's worker peaked at 9.9 GB).
        _trial.clear()
        _timing_base.clear()
        _timing_work["reference"] = []
        _timing_work["candidate"] = []
        _timing_native_outputs.clear()
        _timing_native_params.clear()
        _timing_native_in.clear()
        _runners.clear()  # made for the sets this replaces
        _run_outputs.clear()

    _drop_as_candidate(drop)  # ends with the reference's state in force
    first = _make_inputs(data_seed, data_seed, 1, jitter=False)
    info = _input_info(first)
    set_bytes = _bytes(first)
    # The reference's outputs at these shapes: their bytes bound what any candidate must write,
    # and each side's graphs keep a set's worth of them.
    try:
        with _NoGrad():
            # On a copy: no model is handed a pristine base (refresh() checks them).
            out = _normalise(_ref(*[_timing_clone(x, "reference") for x in first]),
                             "Model.forward", ProblemError)
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("the reference Model failed on the timing inputs:\n%s"
                           % _format_exception(exc))
    _timing_ref_out[:] = out
    out_bytes = _distinct_bytes(out)
    # A native candidate's parameters and outputs rotate with the inputs when they fit: the
    # memory a short kernel reads and writes cold lands on other channels and L2 slices in every
    # process, and a single copy of each made some processes' medians read 5% above others'.
    # (kjudge allocates those outputs whole: their logical bytes count here.) The bound is per
    # set, so that the preset's number of sets does not decide whether a candidate gets them;
    # the copies count in the sets' budget.
    native_bytes = _bytes(_params) + _bytes(out)
    _timing_native_own[0] = bool(native_per_set) and native_bytes <= _NATIVE_PER_SET_BYTES
    per_set = 3 * set_bytes + 2 * out_bytes + (native_bytes if _timing_native_own[0] else 0)
    count = max_sets if per_set == 0 else max(2, min(max_sets, byte_budget // per_set))
    _timing_next[0] = 0
    _timing_base.append(first)
    for i in range(1, count):
        _timing_base.append(_make_inputs(data_seed + 7919 * i, data_seed, 1, jitter=False))
    _timing_work.update(_copies(
        lambda: {side: [[_timing_clone(x, side) for x in base] for base in _timing_base]
                 for side in ("reference", "candidate")},
        "the timing inputs (%d sets of %d bytes, a copy of each for each side) could not be "
        "allocated" % (len(_timing_base), set_bytes)))
    _timing_made.clear()
    _timing_made["base"] = [[_layout(x) for x in base] for base in _timing_base]
    _timing_digest[:] = [[_digest(x) for x in base] for base in _timing_base]
    for side in ("reference", "candidate"):
        _timing_made[side] = [[_made(x) for x in work] for work in _timing_work[side]]
    info["sets"] = len(_timing_base)
    info["bytes_per_set"] = set_bytes
    info["output_bytes"] = out_bytes
    info["native_buffers_per_set"] = _timing_native_own[0]
    # Every floating-point input: all of them take factors of at most 1 (_factor).
    info["shrink_only_inputs"] = [i for i, x in enumerate(first)
                                  if _isinstance(x, _Tensor) and _is_floating_point(x)
                                  and x.numel() > 0]
    # The rewrite before each sample changes floating-point inputs only (integers and bools are
    # indices and masks, which no rewrite keeps valid in general).
    info["varied_inputs"] = sum(1 for x in _timing_base[0]
                                if _isinstance(x, _Tensor) and _is_floating_point(x)
                                and x.numel() > 0)
    return info


# The generators a forward draws from: torch's CPU generator, and on a GPU every GPU's (setup),
# as torch.manual_seed seeds them, without its lookups of torch.random.default_generator and
# torch.cuda.default_generators as it runs (_seed_generators). Not on the CPU: a problem that
# draws on a GPU in a --device cpu run gets other values for the same seed, a problem error that
# says so.
_generators = [torch.default_generator]


def _before_candidate_rewrite():
    """In the candidate's turn, before its inputs' rewrite: nothing of its code left to run while
    they are rewritten and reseeded, where it could see the next sample's inputs and compute for
    them outside the timed region: a profile or trace function is cleared (one left in force is
    its error at the reference's next turn anyway), the collector's passes are held off until
    the rewrite and seeding are done (a finaliser or gc callback would run in one), and a torch
    dispatch mode in force is refused (the rewrite's calls would go through it)."""
    _setprofile(None)
    _settrace(None)
    _hold_gc(True)
    if _dispatch_modes is not None and _dispatch_modes() > 0:
        raise CandidateError("a torch dispatch mode was in force when kjudge rewrote its next "
                             "inputs between its calls: its code would see them there")


def _keyed(sample, lane):
    """64 bits of a hash keyed with the evaluation's secret timing key (HMAC-SHA256, in
    kjudge's C++), of a sample number and a lane (1: the seed, 2: the candidate's factor, 3: an
    audit's slot, 4: the reference's factor). Keyed, so that what a forward can read
    (torch.initial_seed(), its inputs' factor) does not tell it the sample's number: seeds that
    stepped by a constant let a forward see which calls were consecutive timed samples and do
    no work in them (examples/faulty/tells_check_by_seed.py), and an invertible mix of key and
    number (a first version XORed the number into a SplitMix64 finaliser) gave the numbers back
    up to one constant. The key is not in Python, and C++ answers only for the sample numbers
    and lanes of the harness call it has in progress: when the key was a global here, a
    candidate that read it computed the inputs of its next timed samples (and which of its
    calls the audits would keep) in an untimed call and returned the outputs for free in the
    timed ones, correct at 408x on the CPU."""
    return _keyed_by_kjudge(sample, lane)


def _sample_seed(sample):
    """The generator seed of timed sample `sample` (and of the timing check's, numbered after
    them): each sample's forward draws from its own, the same on both sides."""
    return _keyed(sample, _SEED_LANE)


def _seed_generators(seed):
    """A trial's seed (get_inputs(), the models' construction) and a timed sample's (dropout):
    torch's CPU generator and on a GPU every GPU's, Python's and NumPy's, through the generators
    bound before any candidate code ran. Not torch.manual_seed, which takes tens of
    microseconds and looks up torch.random's `default_generator` as it runs: a candidate that
    rebound it to a wrapper zeroing the generator after every seeding had every trial's inputs,
    the held-out one's too, drawn as zeros, and its constant output read correct at 515x for a
    matmul on the CPU."""
    seed &= _SEED_MASK  # derived seeds (base + k) wrap, as the C++ side's do
    for g in _generators:
        g.manual_seed(seed)
    _seed_python(seed)


# The keyed lanes of the two sides' factors (_factor). The candidate's is the one every comparison
# uses (the post-timing check, the audits): both sides are rewritten with it there.
_FACTOR_LANE = {"candidate": 2, "reference": 4}
_SEED_LANE = 1  # the other lanes of _keyed (bridge.cpp names all four; 3, the audits', is C++'s)


def _factor(sample, lane):
    """A scale in [0.5, 1] of the sample's own (_keyed: 53 random bits u in [0, 1), 2^-u; 1 or
    0.5 each with a chance of 2^-53). At most 1, so that an input stays in its domain (a
    probability, a target of binary cross-entropy), and so that the post-timing check, whose
    tolerances are the trials', sees outputs no larger than theirs: with factors up to 2, a
    matmul's outputs grew up to 4x against the same atol, and an honest matmul accumulated in
    float64 failed the check. In the timing loop each side has a lane of its own (and another
    set: refresh()): the rounds alternate the sides' order and take the same sample numbers, so
    where the reference went first, the output the harness kept of it was the candidate's answer
    (correct at 1.90x on the CPU, examples/faulty/takes_reference_output.py)."""
    return _float(2.0 ** -((_keyed(sample, lane) >> 11) * 2.0 ** -53))


def refresh(which, sample, lane=None, k=None):
    """Rewrites `which`'s working copy of set k (by default the number's own, sample % K) for
    sample number `sample` from its base; returns k: floating-point tensors scaled (_factor, by
    `lane`'s factor, `which`'s own unless given), the others (integers, booleans: indices,
    masks) and
    arguments that are not tensors set again as the base has them, so a forward that changed them
    in place (sorted its indices, say) is not timed on its own rewrite. It calls only what the
    harness bound when it loaded (_mul, ...): a candidate's rebinding of torch.mul could otherwise
    skip the rewrite and leave its inputs unchanged sample after sample, or run its code on the
    reference's copy."""
    _turn_of(which)
    k = sample % _len(_timing_base) if k is None else k
    f = _factor(sample, _FACTOR_LANE[which if lane is None else lane])
    if sample >= _timing_next[0]:
        _timing_next[0] = sample + 1
    work = _timing_work[which][k]
    base_layouts, made = _timing_made["base"][k], _timing_made[which][k]
    grad = _grad_enabled()
    _set_grad_enabled(False)
    try:
        _rewrite(k, f, work, base_layouts, made)
    finally:
        _set_grad_enabled(grad)
    return k


def _rewrite(k, f, work, base_layouts, made):
    """refresh()'s rewrite of set k's working copies `work` with factor f."""
    with _no_torch_function():
        for i, src in _enumerate(_timing_base[k]):
            if not _isinstance(src, _Tensor):
                work[i] = src
                continue
            # The models are handed working copies only, never the lists that hold them nor a
            # base: another object in a list, or a base resized, restrided or given other
            # storage, is the candidate's doing (through sys.modules), and would time a side on
            # other work (the reference on more data, say, the rewrite following the base).
            if work[i] is not made[i][0] or _type(src) is not _Tensor:
                raise CandidateError("a timing input of set %d is no longer the tensor kjudge "
                                     "made: the candidate put another object in its place" % k)
            if _layout(src) != base_layouts[i]:
                raise CandidateError("the pristine copy of timing input %d of set %d changed its "
                                     "size, strides, dtype, device or storage: the candidate "
                                     "changed kjudge's timing inputs" % (i, k))
            if _layout(work[i]) != made[i][1]:
                _restore(work[i], made[i], k)
            if _is_floating_point(src) and _dtype_of(src) in _NO_MUL:
                _copy_into(work[i], _mul(_as_float32(src), f))
            elif _is_floating_point(src):
                _mul(src, f, out=work[i])
            else:
                _copy_into(work[i], src)


# Audits of a Python candidate's calls in the timing loop: a forward can tell the post-timing
# check from timed samples (it comes after the loop, each call after the reference's check
# forward, none after a repeated seed), and one that did its work only where it guessed it was not
# timed passed that check at 189x (examples/faulty/skips_work_after_a_repeat.py). So the outputs
# of some calls in the loop are kept, chosen by the secret key where the forward cannot foresee
# which (reservoir sampling over every call, so that they spread over the whole loop), copied to
# the host at the next prepare() of either side (outside the timed region, before that rewrite
# can change inputs an output aliases), held by kjudge's C++ and compared afterwards with the
# reference's on the same sample number.
_AUDIT_SLOTS = 8
_AUDIT_BYTES = 256 << 20  # the kept copies' memory, at most


def audit_slots():
    """How many of the candidate's calls in the timing loop kjudge keeps for audits: as many as fit
    _AUDIT_BYTES of the reference's outputs, at most _AUDIT_SLOTS, at least one. kjudge's C++
    draws the calls (reservoir sampling by the timing key, lane 3, with this process's id mixed
    in, so that the processes of --processes keep different calls) and holds their copies, out
    of the candidate's reach: while they were the harness's, a candidate found them and rewrote
    them (an honest softmax whose kept copies it overwrote was judged incorrect; a dishonest one
    would have written the right answers in)."""
    out_bytes = _bytes(_timing_ref_out) if _timing_ref_out else 0
    return max(1, min(_AUDIT_SLOTS, _AUDIT_BYTES // max(1, out_bytes)))


def _read_number(v):
    """v as an exact bool, int or float where it is one, or the value of a subclass of int or
    float (numpy's float64 is one) read by the base class's own C method; None otherwise."""
    kind = _type(v)
    # By identity: `in` compares with ==, which a metaclass's __eq__ answers (the candidate's
    # code, run in the audit: it could do the forward's work there).
    if kind is _bool or kind is _int or kind is _float:
        return v
    if _issubclass(kind, _float):
        return _float_value(v)
    if _issubclass(kind, _int):
        return _int_value(v)
    number = _plain_number(v)  # a NumPy scalar (numpy.int64, numpy.bool_, numpy.float32)
    return number if number is not v else None


def _audit_outputs(out):
    """A call's outputs as _normalise gives them, read without running anything of the
    candidate's: a plain tensor (or Parameter), a number, or a tuple or list of those, where a
    subclass of a number, tuple or list (a namedtuple, torch.Size, torch.return_types, numpy's
    float64) is read through its base class's C methods. A list subclass whose __len__ did the
    forward's work when kjudge read it, outside every timed region, passed every audit at 397x;
    read so, its items are what the call returned. Tensor subclasses but Parameter are refused
    (their methods are Python); the trials refuse them too (_plain_tensors)."""
    kind = _type(out)
    if kind is _Tensor or kind is _Parameter:
        return [out]
    number = _read_number(out)
    if number is not None:
        return [_number(number, "ModelNew.forward", CandidateError)]
    if _issubclass(kind, _tuple):
        count, item_at = _tuple_len(out), _tuple_item
    elif _issubclass(kind, _list):
        count, item_at = _list_len(out), _list_item
    else:
        raise CandidateError("it returned %s" % _a_type(kind) + _EXACT)
    if count > _MAX_OUTPUTS:
        raise CandidateError("it returned %s of %d items" % (_a_type(kind), count) + _EXACT)
    items = []
    for i in _range(count):
        v = item_at(out, i)
        item = _type(v)
        if item is _Tensor or item is _Parameter:
            items.append(v)
            continue
        number = _read_number(v)
        if number is None:
            raise CandidateError("it returned %s holding %s" % (_a_type(kind), _a_type(item))
                                 + _EXACT)
        items.append(_number(number, "ModelNew.forward", CandidateError))
    return _judgeable(items, "ModelNew.forward", CandidateError)


_EXACT = (", not a plain tensor, a number, or a tuple or list of those: kjudge reads only those "
          "in the timing loop, where a tensor subclass's methods would run the candidate's code "
          "outside every timed region")


def _audit_copy(out):
    """A drawn call's outputs copied to the host for kjudge's C++ to keep (the runner's
    copy_last): (the host copies, their descriptions, "") as _held gives them, or (None, None,
    why) where the candidate made them unreadable: not of the types _audit_outputs reads,
    or read under a torch dispatch mode left in force (whose Python would run in the copy). Torch
    as the harness bound it, with function modes off: the candidate's rebindings are in force
    during its turns. The C++ copies their bytes at once, with the collector off (bridge.cpp,
    gc_paused). The copy is the candidate's turn's work."""
    _turn_of("candidate")
    try:
        if _dispatch_modes is not None and _dispatch_modes() > 0:
            raise CandidateError("a torch dispatch mode was in force after the call")
        with _no_torch_function():  # _number's torch.tensor too: no mode of the candidate's
            outs = _audit_outputs(out)
            if DEVICE == "cuda":
                _cuda_synchronize()
            hosts = [_host_at_once(t) for t in outs]
        return _held(hosts) + ("",)
    except CandidateError as exc:
        return None, None, _str(exc)


_get_referents, _dict = gc.get_referents, dict
_base_of, _grad_of = _TensorBase._base.__get__, _TensorBase.grad.__get__
# Read through type's own descriptors: a metaclass cannot answer for them.
_mro_of, _dict_of = type.__dict__["__mro__"].__get__, type.__dict__["__dict__"].__get__


def _finalizes(kind):
    """Whether freeing an instance of kind runs code of its class: a __del__ anywhere in its MRO
    (a Python class's, or a C type's tp_finalize, which shows there as one)."""
    for c in _mro_of(kind):
        if "__del__" in _dict_of(c):
            return True
    return False


def _runs_code_when_freed(out, depth=0):
    """Whether freeing what a forward returned may run Python code: a weak reference (a
    weakref.finalize, a callback) on it, on one of its tensors or their storages, anything in a
    tensor's __dict__ (an object with a __del__), or a class with a finaliser; a tensor's .grad
    and a view's base, which it frees with it, are read as its items are. A tuple or list,
    a number, or a subclass of them (a namedtuple, torch.return_types, numpy's float64) is read
    through what it holds (gc's referents: its items, an instance dict, slots), two levels deep;
    anything else counts as may."""
    kind = _type(out)
    if out is None or kind is _bool or kind is _int or kind is _float or kind is _str:
        return False
    if kind is _Tensor or kind is _Parameter:
        try:
            if (_getweakrefcount(out) or out.__dict__
                    or _getweakrefcount(out.untyped_storage())):
                return True
            held = [t for t in (_base_of(out), _grad_of(out)) if t is not None]
        except Exception:
            return True
        if held and depth > 2:
            return True
        return any(_runs_code_when_freed(t, depth + 1) for t in held)
    if depth > 2 or _getweakrefcount(out) or _finalizes(kind) or not (
            _issubclass(kind, _tuple) or _issubclass(kind, _list) or _issubclass(kind, _float)
            or _issubclass(kind, _int)):
        return True
    for held in _get_referents(out):
        if held is kind:
            continue
        if _type(held) is _dict:
            if _len(held):
                return True
        elif _runs_code_when_freed(held, depth + 1):
            return True
    return False


def timing_audit_begin(sample):
    """A kept call of the candidate's made the next comparison, timing_check_finish("held",
    sample), which runs the reference on that number's rewrite from that number's seed. kjudge's
    C++ holds the kept copy and compares it itself: it never comes back to Python, where a
    finalizer of the candidate's run by a collection in the reference's forward could reach it."""
    _compared_sample(sample)


def make_runner(which):
    """(prepare, run, capture, run_graph, drop, copy_last) for one side: prepare(sample)
    refreshes and selects the set, run() calls the model on it; capture() records one forward
    per set in a CUDA graph ("" or why not), run_graph() replays the selected set's, drop()
    frees them; copy_last() copies what run() returned last for an audit (_audit_copy),
    when kjudge's C++ draws the call (the first run() after a prepare(), counted there)."""
    model = _ref if which == "reference" else _cand
    sets = _timing_work[which]
    no_grad = _NoGrad
    current = [0]
    # What run() returned last, kept until this side's next prepare() (the timing check of a
    # Python candidate calls this same run(), from C++ as a timed sample is, and compares what it
    # kept: a forward that looked for how it is called, kjudge's frames above it, and skipped its
    # work only while timed got past a check that called it another way; kjudge's C++ copies a
    # drawn call's outputs before any prepare() runs Python code). Freed there, outside the
    # timed region: code of the candidate's that runs when the reference's outputs are freed (a
    # weakref.finalize on one, an object with a __del__ in its __dict__) ran inside the
    # reference's next timed call when it replaced them, and a finalizer that slept 3 ms there
    # read correct at 4.1x for torch.softmax itself on the CPU. The candidate's is freed after
    # the switch to its turn, under its own state (freed before, what its finalizer changed was
    # taken for the reference's own doing); the reference's as _Reach.release says (a switch's
    # whole check before every call of the reference, 180 us, left its caches colder than the
    # candidate's: a 4 us ReLU against itself read 1.25x).
    last = _run_outputs[which] = [None]

    def prepare(sample, k=None):
        # Both sides' frees at the same point, before the inputs' rewrite, so that the allocator
        # is in the same state for both sides' calls: freed before the rewrite on one side and
        # after it on the other, the candidate's 128 MB add read 1.53x against the same add of
        # the reference's. Before it: code of the candidate's that ran when its last output was
        # freed after the rewrite (a weakref.finalize) saw the next sample's inputs, and computed
        # their matmul there, outside the timed region; the timed call returned it, correct at
        # 233x on the CPU (examples/faulty/precomputes_when_freed.py). The candidate's is freed
        # in its own turn (what its finalizer changes is its own), and what such code could leave
        # to watch the rewrite is taken away or refused first (_before_candidate_rewrite). The
        # reference's state is put in force last, after everything of this setup that code of
        # the candidate's could reach (release(), the rewrite, the seeding), as its check.
        _turn_of(which)  # the side's turn begins: CPU its finalizers' threads take counts to it
        if which == "reference":
            _reach.release(last)
        else:
            _reach.use("candidate")
            last[0] = None
            _before_candidate_rewrite()
        # k: the set, as kjudge's timing engine chose it for the number (the reference runs a
        # number on another set than the candidate: python_target::set_of in bridge.cpp).
        current[0] = refresh(which, sample, k=k)
        _seed_generators(_sample_seed(sample))
        if which == "candidate":
            _hold_gc(False)  # the candidate's own switch for its call, as use() gave it
        else:
            _reach.use("reference")

    def run():
        # Without the cycle collector's automatic passes, as timeit times: a pass runs in
        # whichever call allocates past the thresholds, and its cost grows with everything the
        # process holds. Its counts carry from one side's calls to the other's, so a side that
        # set gc.set_threshold(1) could push passes into the other side's timed calls. Passes
        # the forward asks for (gc.collect()) run; the collector's switch is as before once the
        # call returns.
        on = _gc_isenabled()
        _gc_disable()
        try:
            with no_grad():
                last[0] = model(*sets[current[0]])
        finally:
            if on:
                _gc_enable()

    def capture(stream_handle):
        if which == "candidate":
            return _as_candidate(lambda: capture_side(stream_handle))
        _reach.use("reference")
        return capture_side(stream_handle)

    def capture_side(stream_handle):
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
                    model(*[_timing_clone(x, which) for x in sets[0]])
                side.synchronize()
        except torch.cuda.OutOfMemoryError as exc:
            # The other side's graphs may hold memory that its eager timing would not.
            return "out of memory in the warm-up before capture: %s" % _first_line(exc)
        # capture_begin/capture_end, not torch.cuda.graph: on the H200 (torch 2.11) every
        # evaluation whose graphs torch.cuda.graph captured recorded the candidate's kernel about
        # 0.37 us (10%) longer under CUPTI after timing (3.81-4.13 us), where with these calls
        # (no synchronize, empty_cache or host empty_cache first) 8 of 9 read as without graphs
        # (3.55-3.74 us). The device medians did not move either way. The call that does it is
        # torch._C._host_emptyCache() (3.90-4.00 us after it alone; synchronize() or
        # empty_cache() alone 3.58-3.68 us: docs/benchmarks.md, nineteenth session). The stream
        # is restored here as well, should the context below ever leave it behind.
        previous = torch.cuda.current_stream()
        for attempt in range(2):
            made, outs = [], []
            pool = torch.cuda.graph_pool_handle()
            out_of_memory = False
            try:
                with no_grad():
                    for k in range(len(sets)):
                        g, out = _capture(model, sets[k], side, pool)
                        made.append(g)
                        outs.append(out)
                torch.cuda.current_stream().wait_stream(side)
            except BaseException as exc:
                torch.cuda.set_stream(previous)
                why = "%s under CUDA graph capture: %s" % (type(exc).__name__, _first_line(exc))
                # Leaving a capture that already failed raises its own error ("operation failed
                # due to a previous error during capture"); the cause is the one it replaced.
                cause = exc.__context__
                if cause is not None and cause is not exc:
                    why += " (after %s: %s)" % (type(cause).__name__, _first_line(cause))
                out_of_memory = isinstance(exc, torch.cuda.OutOfMemoryError) or isinstance(
                    cause, torch.cuda.OutOfMemoryError)
            else:
                _timing_graphs[which] = (made, outs)
                return ""
            # Outside the except clause, so no traceback keeps this frame (and with it the failed
            # graph, whose destruction releases its pool if its capture ended) alive for the
            # cycle collector to free in the middle of a timed sample.
            cause = g = out = None
            made.clear()
            outs.clear()
            _reset_after_failed_capture(pool, side, which)
            if not out_of_memory or attempt > 0:
                return why
            # While a capture is underway the caching allocator cannot hand what it holds back
            # to the driver for the graph's pool (torch.cuda.graph empties the cache before every
            # capture; the calls above do not): out of memory, it is emptied and the capture
            # tried once more.
            torch.cuda.empty_cache()
        return why

    def run_graph():
        _timing_graphs[which][0][current[0]].replay()

    def drop():
        _timing_graphs.pop(which, None)

    def copy_last():
        return _audit_copy(last[0])

    _runners[which] = (prepare, run, capture, run_graph, drop, copy_last)
    return _runners[which]


def _capture(model, args, side, pool):
    """(graph, outputs) of one forward captured on stream `side` into memory pool `pool`."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        g.capture_begin(pool=pool, capture_error_mode="thread_local")
        try:
            out = model(*args)
        finally:
            # A capture that a failed forward invalidated raises here, with the forward's
            # exception as its __context__ (capture_side reports both).
            g.capture_end()
    return g, out


def _reset_after_failed_capture(pool, side, which):
    """Undoes what a failed capture leaves behind (checked, inside torch.cuda.graph, on
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


def _native_set(k):
    """The set whose parameters and outputs set k uses (k itself, or 0 when they are shared)."""
    return k if _timing_native_own[0] else 0


def _native_copy(cache, k, make):
    """cache[set] for the set whose copy set k uses, made by make(set) the first time."""
    k = _native_set(k)
    if k not in cache:
        cache[k] = make(k)
    return cache[k]


def _native_outputs_of(k):
    return _native_copy(_timing_native_outputs, k,
                        lambda _: [_poisoned_like(t) for t in _timing_ref_out])


def timing_native_outputs(k):
    """Set k's reference-shaped outputs for the native candidate (poisoned)."""
    return [_describe(t, "output%d" % i) for i, t in enumerate(_native_outputs_of(k))]


def timing_native_params(k):
    """Set k's copies of the reference's parameters and buffers (set 0 has the trials' own)."""
    params = _native_copy(_timing_native_params, k, lambda s: _params if s == 0 else
                          [_contiguous_clone(t) for t in _params])
    return [_describe(t, name) for t, name in zip(params, _param_names)]


def _digest(x):
    """A summary of an input's bytes, taken before any candidate code could reach it and compared
    exactly later: (dtype, shape, device) and sums over its 8-byte words, the whole and those at
    every second, third, fifth and seventh place (so that values moved within the tensor change
    it too, unless moved by a multiple of 210 words). For anything but a tensor, (its type's
    name, the value); for a tensor whose bytes cannot be read so (sparse, quantized, meta,
    nested), its head and "unreadable". Only what the harness bound when it loaded is called,
    with torch function modes off; a contiguous tensor at an 8-byte offset is summed in place,
    any other is copied first. Not a proof against a change made to keep it."""
    if not _isinstance(x, _Tensor):
        return (_type(x).__name__, x)
    with _no_torch_function():
        try:
            head = (_str(_dtype_of(x)), _tuple(_size(x)), _str(_device_of(x)))
        except Exception:
            return ("unreadable tensor",)
        try:
            if _without_values(x):
                return head + ("unreadable",)
            if _numel(x) == 0:
                return head
            # a conjugate or negative view has its values resolved into memory first
            b = _view(_reshape(_contiguous(_resolve_neg(_resolve_conj(_detach(x)))), (-1,)),
                      _uint8)
            if _offset_of(b) % 8:
                b = _copy_of(b)
            n = _numel(b)
            whole = n - n % 8
            w = _view(_item(b, _slice(0, whole)), _int64)
            tail = _to(_item(b, _slice(whole, n)), _int64)
            return head + _tuple(_value(_sum_of(_item(w, _slice(first, None, step))))
                                 for first, step in ((0, 1), (0, 2), (1, 3), (2, 5), (3, 7))) + (
                _value(_sum_of(tail)),)
        except Exception:
            return head + ("unreadable",)


def _check_timing_bases():
    """Raises CandidateError where a pristine timing input's values changed since timing_setup:
    the models are never handed a base, so only a candidate that reached it through sys.modules
    could have (zeroing them made both sides be timed on zeros, and a candidate that returned
    zeros for zero inputs was judged correct at 4x)."""
    for k, base in _enumerate(_timing_base):
        for i, x in _enumerate(base):
            if _digest(x) != _timing_digest[k][i]:
                raise CandidateError("the values of kjudge's pristine copy of timing input %d of "
                                     "set %d changed during timing: the candidate changed "
                                     "kjudge's timing inputs, and both sides were timed on "
                                     "other data" % (i, k))


def timing_check_first_sample():
    """The first sample number of the post-timing check: the first multiple of the sets past every
    number either side's samples used, so that no check sample reuses a timed one's factor. Its
    seeds and factors are keyed hashes of these numbers as the timed ones' are (_keyed): a
    forward cannot tell them apart by torch.initial_seed() or its inputs' scale."""
    _check_timing_bases()
    sets = _len(_timing_base)
    return -(-_timing_next[0] // sets) * sets if sets else 0


def timing_check_begin(sample):
    """Refreshes both sides' copies for `sample`; returns the set index. The reference's forward
    runs later (timing_check_finish), after the candidate's, as in a trial. Each side's check
    forward starts from the same generator state (a seed of the check's own), as both sides'
    forwards of a trial do: a forward that draws random numbers (dropout) matches only then."""
    _compared_sample(sample)
    k = refresh("reference", sample, "candidate")
    refresh("candidate", sample)
    for t in _timing_native_outputs.get(_native_set(k), ()):  # a native candidate writes again
        _poison(t)
    return k


def _compared_sample(sample):
    """What a comparison on timing sample `sample` starts from (the post-timing check's or an
    audit's, both ended by timing_check_finish): a new poison, the sample's seed and set, and no
    outputs of an earlier comparison."""
    _next_poison()
    _trial["check_seed"] = _sample_seed(sample)
    _trial["timing_set"] = sample % _len(_timing_base)
    for key in ("timing_ref_out", "timing_ref_other"):
        _trial.pop(key, None)


def _timing_check_reference(sample):
    """The reference's forward (normalised outputs) on its copy rewritten for `sample`, again:
    whatever ran since timing_check_begin cannot change what it computes on."""
    _reach.use("reference")
    k = refresh("reference", sample, "candidate")
    try:
        with _NoGrad():
            _seed_generators(_trial["check_seed"])  # as the candidate's prepare() seeded it
            out = _ref(*_timing_work["reference"][k])
        _reach.adopt_reference_run()
        return _normalise(out, "Model.forward", ProblemError)
    except ProblemError:
        raise
    except BaseException as exc:
        raise ProblemError("the reference failed on the timing check:\n%s" % _format_exception(exc))


def _seeded(call):
    """call() from the check's generator state (timing_check_begin)."""
    _seed_generators(_trial["check_seed"])
    return call()


def timing_check_collect_candidate():
    """After the candidate's runner was called for the check's sample as for a timed one
    (prepare, then run, both from C++: python::session::timing_check_candidate): its outputs,
    copied to the host. What that call changed of torch's state is noted and kept to the
    candidate's calls, the reference checked (_Reach.leave(), as after any checked call of its
    code): the reference's check runs next."""
    who = "ModelNew.forward (timing check)"
    _blamed_on_candidate(synchronize, "%s raised" % who)
    _reach.leave()

    def hosts():
        outs = _candidate_list(_run_outputs["candidate"][0], who)
        return _hosts(outs, CandidateError, "the candidate's", reached=True)

    return _held(_plain_hosts(_as_candidate(hosts), who))


def _held(hosts):
    """(host copies, their descriptions) for kjudge's C++, which copies their bytes at once and
    compares them where it holds them (timing_check_finish("held", ...)): the harness keeps no
    reference to them, so no code of the candidate's can change them before the comparison."""
    return hosts, [_describe(t) for t in hosts]


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
    """The candidate's graph of set k replayed (on inputs timing_check_begin rewrote): _held."""
    return _held(_candidate_outputs(
        lambda: _seeded(lambda: _replay_timing_graph("candidate", k)),
        "ModelNew.forward (graph)")[0])


def timing_check_reference_graph(sample):
    """The reference's graph of the sample's set replayed on the same rewrite as its eager
    forward (rewritten again: the forward may have changed its inputs);
    timing_check_finish("reference_graph") compares the two. The eager outputs are copied first:
    one that is an input or a buffer of the model would otherwise be what the graph writes."""
    _trial["timing_ref_out"] = [t.clone() for t in _timing_check_reference(sample)]
    k = refresh("reference", sample, "candidate")
    _trial["timing_ref_other"] = (_seeded(lambda: _replay_timing_graph("reference", k)),
                                  "the reference graph's")


def timing_check_reference_again(sample):
    """The reference's forward twice more on the rewrite for `sample`, each from the check's
    generator state (_timing_check_reference), after the candidate's outputs of that sample did
    not match its first: timing_check_finish("reference_again") compares the two. Outputs that
    differ are not a function of the inputs (state the forward keeps between calls, a random draw
    kjudge's seed does not reach), and the mismatch may not be the candidate's."""
    _trial["timing_ref_out"] = [t.clone() for t in _timing_check_reference(sample)]
    _trial["timing_ref_other"] = (_timing_check_reference(sample), "the reference's second run's")


def timing_check_finish(source, sample):
    """The reference's (eager) outputs of the check for `sample` against `source`'s: "native"
    (the native candidate's output buffers), "held" (ModelNew's, by forward or graph replay, or
    a kept call of the timing loop's: none here, kjudge's C++ holds them and adds them: _held,
    timing_audit_begin), "reference_graph" (the reference's own graph replay, from
    timing_check_reference_graph) or "reference_again" (its forward's second run, from
    timing_check_reference_again)."""
    if source in ("reference_graph", "reference_again"):  # the reference against itself
        ref_out = _trial["timing_ref_out"]
        other, whose = _trial["timing_ref_other"]
        cand_host = _hosts(other, ProblemError, whose)
    else:
        ref_out = _timing_check_reference(sample)
        cand_host = ([] if source == "held"
                     else _hosts(_native_outputs_of(_trial["timing_set"]), CandidateError,
                                 "the candidate's"))
    ref_host = _hosts(ref_out, ProblemError, "the reference's")
    _trial["host"] = (ref_host, cand_host)
    return {
        "reference": [_describe(t) for t in ref_host],
        "candidate": [_describe(t) for t in cand_host],
        "inputs_modified": [],
        "reference_ms": 0.0,
        "candidate_ms": 0.0,
    }
