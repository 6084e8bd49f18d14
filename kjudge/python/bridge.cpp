// The C++ half of the bridge: starts the embedded interpreter, loads the harness (harness.py,
// compiled into the binary) and converts between its dicts and kjudge's types. Python.h and
// pybind11 appear in this file only.

#include <kjudge/python/bridge.hpp>
#include <kjudge/python/harness_seal.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/jitter.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/core/strided_copy.hpp>
#include <kjudge/cuda/stream.hpp>
#include <kjudge/runner/fence.hpp>
#include <kjudge/runner/native_settings.hpp>

namespace py = pybind11;

namespace kj::embedded {
extern const std::string_view harness_py;
}

namespace {

/** `popcorn_pri` as problems see it: one jitter table per trial, reset by the harness. Outside
 *  a trial (the problem's import, the models' construction) sizes are nominal. */
struct popcorn_pri {
  kj::jitter_table table{0, 1, false};
  /** Sizes drawn at the problem's import (seal 1) and while the models were built (seal 2):
   *  pinned in every table reset() makes. Kept here, out of Python's reach: a candidate could
   *  otherwise pin the trials' sizes to the ones its kernel was written for. */
  std::map<std::int64_t, std::int64_t> sealed;
  int seals = 0;
};

/** The popcorn_pri object and its type's methods as the module made them (leaked on purpose:
 *  alive as long as the interpreter), for session's check that nothing replaced them. */
struct popcorn_originals {
  py::object object;
  std::vector<std::pair<std::string, py::object>> methods;
};
popcorn_originals* g_popcorn = nullptr;

/** str(obj) in UTF-8 whatever it holds: a lone surrogate ("\\ud800", which a candidate's message
 *  may carry) becomes its escape instead of an encoding error that would make the candidate's
 *  error kjudge's. Raises (error_already_set) only if str() itself does. */
std::string utf8_text(py::handle obj) {
  const py::str text(obj);
  const auto bytes = py::reinterpret_steal<py::object>(
      PyUnicode_AsEncodedString(text.ptr(), "utf-8", "backslashreplace"));
  if (!bytes) throw py::error_already_set();
  return {PyBytes_AS_STRING(bytes.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.ptr()))};
}

/** The exception's message as utf8_text reads it, or a placeholder where even that fails (a
 *  message whose str() raises). Never throws. */
std::string message_of(const py::error_already_set& e) noexcept {
  try {
    return utf8_text(e.value());
  } catch (...) {
    return "[the exception's message could not be read]";
  }
}

/** What pybind11's what() says (type, message, then the traceback's frames, the innermost
 *  last), built without it: what() is noexcept and converts frame names with
 *  cast<std::string>, so a code object whose name is no valid UTF-8 (a lone surrogate a
 *  candidate put there) ended the worker in std::terminate. Never throws. */
std::string error_text(const py::error_already_set& e) noexcept {
  std::string out;
  try {
    out = utf8_text(e.type().attr("__qualname__"));
  } catch (...) {
    out = "exception";
  }
  out += ": " + message_of(e);
  try {
    std::vector<std::string> frames;
    for (py::handle tb = e.trace(); tb && !tb.is_none(); tb = tb.attr("tb_next")) {
      const py::object code = tb.attr("tb_frame").attr("f_code");
      frames.push_back(fmt::format("  {}({}): {}", utf8_text(code.attr("co_filename")),
                                   utf8_text(tb.attr("tb_lineno")),
                                   utf8_text(code.attr("co_name"))));
      if (frames.size() > 64) frames.erase(frames.begin());
    }
    if (!frames.empty()) out += fmt::format("\n\nAt:\n{}", fmt::join(frames, "\n"));
  } catch (...) {
    // the message alone
  }
  return out;
}

/** The evaluation's secret timing key, and the (sample, lane) pairs the harness may hash with it
 *  during the call into the harness that is in progress (keyed_allowance). The key stays here:
 *  Python code, a candidate's included, gets hashes for those pairs only. */
struct keyed_gate {
  std::uint64_t key = 0;
  std::vector<std::pair<std::uint64_t, int>> allowed;
};
keyed_gate g_keyed;

/** The lanes of _keyed (harness.py): the seed, the two sides' factors, an audit's slot. */
constexpr int seed_lane = 1, candidate_factor_lane = 2, audit_lane = 3, reference_factor_lane = 4;

/** The lane of a side's factor in the timing loop. */
constexpr int factor_lane(kj::python::side s) {
  return s == kj::python::side::reference ? reference_factor_lane : candidate_factor_lane;
}

/** HMAC-SHA256 keyed with `key` (8 bytes, little-endian) of the sample number (8 bytes) and the
 *  lane (1 byte); its first 8 bytes, little-endian. Lane 3, an audit's slot, mixes in the
 *  process's id, so that the processes of --processes keep different calls. */
std::uint64_t keyed_hash(std::uint64_t key, std::uint64_t sample, int lane) {
  if (lane == audit_lane) sample += static_cast<std::uint64_t>(::getpid()) << 40;
  std::array<std::uint8_t, 64> pad{};
  for (int i = 0; i < 8; ++i) pad[static_cast<std::size_t>(i)] = (key >> (8 * i)) & 0xffu;
  std::array<std::uint8_t, 9> message{};
  for (int i = 0; i < 8; ++i) message[static_cast<std::size_t>(i)] = (sample >> (8 * i)) & 0xffu;
  message[8] = static_cast<std::uint8_t>(lane);
  const auto pass = [&pad](std::uint8_t x, std::span<const std::uint8_t> data) {
    std::array<std::uint8_t, 64> block{};
    for (std::size_t i = 0; i < block.size(); ++i) block[i] = pad[i] ^ x;
    kj::sha256 h;
    h.update(std::as_bytes(std::span(block)));
    h.update(std::as_bytes(data));
    return h.finish();
  };
  const auto inner = pass(0x36, message);
  const auto outer = pass(0x5c, inner);
  std::uint64_t out = 0;
  for (int i = 7; i >= 0; --i) out = (out << 8) | outer[static_cast<std::size_t>(i)];
  return out;
}

/** The (sample, lane) pairs the harness may hash during one call into it; the earlier ones
 *  again after it. */
class keyed_allowance {
 public:
  explicit keyed_allowance(std::vector<std::pair<std::uint64_t, int>> pairs)
      : m_before(std::exchange(g_keyed.allowed, std::move(pairs))) {}
  ~keyed_allowance() { g_keyed.allowed = std::move(m_before); }
  keyed_allowance(const keyed_allowance&) = delete;
  keyed_allowance& operator=(const keyed_allowance&) = delete;

 private:
  std::vector<std::pair<std::uint64_t, int>> m_before;
};

#if PY_VERSION_HEX < 0x030A0000
#error "kjudge embeds Python 3.10 or newer (PyGC_Disable)"
#endif

/** The cyclic collector off for a scope, as it was after: where a drawn call of the candidate's
 *  is copied for an audit, and the harness's seal checked before that. A collection there ran
 *  the candidate's code first (a gc callback of its own, with threshold 1, wrote the right
 *  answer into the call's zeros: correct at 2.80x). */
class gc_paused {
 public:
  gc_paused() : m_was(PyGC_Disable()) {}
  ~gc_paused() {
    if (m_was != 0) PyGC_Enable();
  }
  gc_paused(const gc_paused&) = delete;
  gc_paused& operator=(const gc_paused&) = delete;

 private:
  int m_was;
};

/** MKL's thread control in this process, looked up at the first call (the harness's, once torch
 *  is loaded). */
const std::optional<kj::runner::mkl_threads>& process_mkl() {
  static const auto mkl = kj::runner::mkl_threads::find();
  return mkl;
}

}  // namespace

PYBIND11_EMBEDDED_MODULE(_kjudge, m) {
  m.doc() = "kjudge internals for the in-worker harness";
  m.def(
      "keyed",
      [](std::uint64_t sample, int lane) {
        const std::pair<std::uint64_t, int> asked{sample, lane};
        if (std::find(g_keyed.allowed.begin(), g_keyed.allowed.end(), asked) ==
            g_keyed.allowed.end())
          throw std::runtime_error(
              "kjudge's timing hash answers only for the samples kjudge is preparing");
        return keyed_hash(g_keyed.key, sample, lane);
      },
      "The timing key's hash of (sample, lane), for the harness's call in progress only.");
  py::class_<popcorn_pri>(m, "PopcornPri")
      .def(
          "jitter_int",
          [](popcorn_pri& self, py::object n) {
            // An integer (anything with __index__: numpy's too), never a float truncated, a
            // string parsed or a bool: a size computed wrongly is the problem's error to see.
            if (py::isinstance<py::bool_>(n) || !PyIndex_Check(n.ptr()))
              throw py::type_error("popcorn_pri.jitter_int takes an integer size, not " +
                                   std::string(py::str(py::type::of(n).attr("__name__"))));
            int overflow = 0;
            const long long size = PyLong_AsLongLongAndOverflow(py::int_(n).ptr(), &overflow);
            if (overflow != 0)
              throw py::value_error("popcorn_pri.jitter_int(" + std::string(py::str(n)) +
                                    "): a size beyond 64 bits");
            if (size == -1 && PyErr_Occurred()) throw py::error_already_set();
            return self.table.jitter_int(static_cast<std::int64_t>(size));
          },
          "One jittered value (+-15%) per distinct nominal size per trial.")
      .def("reset",
           [](popcorn_pri& self, std::uint64_t seed, std::int64_t scale, bool jitter) {
             self.table = kj::jitter_table(seed, scale, jitter);
             for (const auto& [n, v] : self.sealed) self.table.pin(n, v);
           })
      .def("seal",
           [](popcorn_pri& self, int stage) {
             // Once each, in order: 1 after the problem's import, 2 once the models are built.
             if (stage != self.seals + 1)
               throw std::runtime_error(
                   fmt::format("popcorn_pri.seal({}) after seal {}: only kjudge seals, once", stage,
                               self.seals));
             self.sealed = self.table.draws();
             self.seals = stage;
           })
      .def("pinned",
           [](const popcorn_pri& self) {
             std::vector<std::int64_t> out;
             for (const auto& kv : self.sealed) out.push_back(kv.first);
             return out;
           })
      .def("draws", [](const popcorn_pri& self) { return self.table.draws(); });
  m.def(
      "copy_masked",
      [](std::uintptr_t from, const std::vector<std::int64_t>& sizes,
         const std::vector<std::int64_t>& strides, std::size_t element, std::uintptr_t to) {
        if (sizes.size() != strides.size())
          throw std::invalid_argument("copy_masked: as many strides as sizes");
        const kj::runner::signals_blocked unhandled;
        kj::gather_strided(reinterpret_cast<const std::byte*>(from), sizes, strides, element,
                           reinterpret_cast<std::byte*>(to));
      },
      "copy_masked(from, sizes, strides, element_bytes, to): the elements of a strided tensor "
      "gathered into contiguous memory with every signal blocked on this thread (the harness's "
      "first read of a CPU output: _read_masked).");
  // Process-wide native state the reference runs under (runner/native_settings.hpp): the
  // harness keeps each to the candidate's calls. The allocator's tunables are read from the
  // environment here, at the harness's import, before any code of the candidate's runs.
  m.def("thread_cpus", [] { return kj::runner::thread_cpus(); });
  m.def("threads_off",
        [](const kj::runner::cpu_list& usual) { return kj::runner::threads_off(usual); });
  m.def("set_threads",
        [](const std::vector<std::pair<int, kj::runner::cpu_list>>& wanted,
           const kj::runner::cpu_list& usual) { return kj::runner::set_threads(wanted, usual); });
  m.def("openmp_binds_threads", [] {
    return kj::runner::openmp_binds_threads([](const char* n) { return std::getenv(n); });
  });
  static const kj::runner::allocator_tunables tunables =
      kj::runner::allocator_tunables_from([](const char* n) { return std::getenv(n); });
  m.def("apply_allocator_tunables", [] { return kj::runner::apply_allocator_tunables(tunables); });
  m.def("thp_disabled", [] {
    const auto v = kj::runner::thp_disabled();
    if (!v) throw std::runtime_error("this kernel does not say whether huge pages are off");
    return *v;
  });
  m.def("set_thp_disabled", [](int off) { return kj::runner::set_thp_disabled(off); });
  m.def("child_subreaper", [] { return kj::runner::child_subreaper().value_or(false); });
  m.def("set_child_subreaper", [](bool on) { return kj::runner::set_child_subreaper(on); });
  // The C library's environment, as bytes (a variable need not be UTF-8), and the signals'
  // dispositions, handlers set from C among them, as (signal, handler, flags, mask) tuples.
  m.def("environment", [] {
    py::list out;
    for (const std::string& e : kj::runner::environment()) out.append(py::bytes(e));
    return py::tuple(out);
  });
  m.def("set_environment", [](const std::vector<py::bytes>& wanted) {
    std::vector<std::string> entries;
    entries.reserve(wanted.size());
    for (const py::bytes& b : wanted) entries.emplace_back(b);
    return kj::runner::set_environment(entries);
  });
  m.def("signal_actions", [] {
    py::list out;
    for (const auto& a : kj::runner::signal_actions())
      out.append(py::make_tuple(a.signal, a.handler, a.flags, a.mask));
    return py::tuple(out);
  });
  m.def("set_signal_actions",
        [](const std::vector<std::tuple<int, std::uintptr_t, int, std::uint64_t>>& wanted) {
          std::vector<kj::runner::signal_action> actions;
          for (const auto& [s, h, f, mask] : wanted) actions.push_back({s, h, f, mask});
          return kj::runner::set_signal_actions(actions);
        });
  m.def("openmp_state", [] {
    const auto s = kj::runner::openmp();
    if (!s) throw std::runtime_error("no OpenMP runtime in this process");
    return std::make_pair(s->max_active_levels, s->dynamic);
  });
  m.def("set_openmp_state", [](const std::pair<int, int>& s) {
    return kj::runner::set_openmp({s.first, s.second});
  });
  m.def("mkl_blas_threads", [] {
    const auto n = kj::runner::mkl_blas_threads();
    if (!n) throw std::runtime_error("this MKL does not say its BLAS domain's thread count");
    return *n;
  });
  m.def("fp_control", [] { return kj::runner::fp_control(); });
  m.def("set_fp_control", [](unsigned c) { return kj::runner::set_fp_control(c); });
  m.def("mkl_threads", [] {
    if (!process_mkl()) throw std::runtime_error("no MKL in this process");
    return process_mkl()->get();
  });
  m.def("set_mkl_threads", [](int n) { return process_mkl() && process_mkl()->set(n); });
  m.attr("popcorn_pri") = py::cast(popcorn_pri{}, py::return_value_policy::move);
  g_popcorn = new popcorn_originals{m.attr("popcorn_pri"), {}};
  const py::dict methods = m.attr("PopcornPri").attr("__dict__");
  for (const char* name : {"jitter_int", "reset", "seal", "pinned", "draws"})
    g_popcorn->methods.emplace_back(name, methods[name]);
}

namespace kj::python {

std::size_t tensor_view::numel() const noexcept {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

namespace {

/** `owner` is who produced the tensor: an unsupported dtype is that side's problem, unless
 *  `compared` (a candidate's output, which then fails its comparison as a dtype mismatch). */
tensor_view to_view(const py::handle& d, error_kind owner, bool compared) {
  tensor_view v;
  v.data = reinterpret_cast<void*>(d["data"].cast<std::uintptr_t>());
  const auto name = d["dtype"].cast<std::string>();
  const auto t = dtype_from_string(name);
  v.shape = d["shape"].cast<std::vector<std::int64_t>>();
  v.strides = d["strides"].cast<std::vector<std::int64_t>>();
  v.name = d["name"].cast<std::string>();
  if (d.contains("number")) v.python_number = d["number"].cast<std::string>();
  if (!t && compared) {
    v.unsupported_dtype = name;
    v.data = nullptr;
    return v;
  }
  if (!t)
    KJ_THROW(owner, "kjudge cannot compare or pass tensors of dtype '{}' ({} side)", name,
             owner == error_kind::candidate ? "candidate" : "reference");
  v.type = *t;
  return v;
}

std::vector<tensor_view> to_views(const py::handle& list, error_kind owner = error_kind::problem,
                                  bool compared = false) {
  std::vector<tensor_view> out;
  for (const auto& d : list) out.push_back(to_view(d, owner, compared));
  return out;
}

trial_inputs_info to_inputs_info(const py::handle& d) {
  trial_inputs_info info;
  info.shapes = d["shapes"].cast<std::vector<std::vector<std::int64_t>>>();
  info.dtypes = d["dtypes"].cast<std::vector<std::string>>();
  info.jitter = d["jitter"].cast<std::map<std::string, std::int64_t>>();
  if (d.contains("pinned")) info.pinned = d["pinned"].cast<std::vector<std::int64_t>>();
  return info;
}

/** The seal of the session's harness (harness_seal.hpp), while there is one. */
const detail::harness_seal* g_seal = nullptr;

/** An audit hook (PEP 578) cannot be removed and sees every audited operation, the harness's
 *  reads of sys.monitoring among them: a candidate's could put a monitoring callback back right
 *  after a check, or run code inside the reference's calls. This one, added before the
 *  interpreter starts, refuses every later hook: Python drops a new hook, silently, when an
 *  installed one raises RuntimeError on its "sys.addaudithook" event. In C it costs every other
 *  audited operation a few string comparisons; a Python hook added about 130 us to each of the
 *  harness's reads of sys.monitoring. It also refuses changes to the sealed harness's functions
 *  (below). */
int refuse_audit_hooks(const char* event, PyObject* args, void* /*data*/) {
  if (std::strcmp(event, "sys.addaudithook") == 0) {
    PyErr_SetString(PyExc_RuntimeError, "kjudge's worker takes no audit hooks");
    return -1;
  }
  // Python audits the replacement of a function's code, defaults and keyword defaults (and
  // their deletion): refused for the harness's own functions once it is sealed.
  if (g_seal != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 2 &&
      (std::strcmp(event, "object.__setattr__") == 0 ||
       std::strcmp(event, "object.__delattr__") == 0) &&
      g_seal->holds_function(PyTuple_GET_ITEM(args, 0))) {
    PyErr_Format(PyExc_RuntimeError, "kjudge's worker refuses to change %S of its harness's %R",
                 PyTuple_GET_ITEM(args, 1), PyTuple_GET_ITEM(args, 0));
    return -1;
  }
  return 0;
}

}  // namespace

struct session::impl {
  py::scoped_interpreter interpreter;
  py::module_ harness;
  detail::harness_seal seal;  ///< the harness as its code left it (sealed by start_interpreter)
  /** The candidate's code may have run (its import began): a change to the harness is its. */
  bool candidate_loaded = false;
  /** A call of the candidate's in the timing loop, kept for an audit: its outputs' bytes as the
   *  harness copied them to the host, held here, where no Python code reaches them. */
  struct kept_call {
    struct output {
      std::string dtype;  ///< torch's name
      std::vector<std::int64_t> shape;
      std::vector<std::byte> bytes;  ///< contiguous; none for a dtype kjudge does not compare
      std::string python_number;     ///< tensor_view::python_number
      /** An expansion (its strides reach fewer elements than it has: harness.py, _reached):
       *  its strides, `bytes` holding the elements they reach until kept_view writes it out.
       *  Empty otherwise. */
      std::vector<std::int64_t> strides;
    };
    std::size_t sample = 0;
    std::string why;  ///< why its outputs could not be read (then it has none), or ""
    std::vector<output> outputs;
  };
  /** The audits of the candidate's timed calls, counted, drawn and kept here. While the harness
   *  kept them, a candidate switched its audit state off (no call kept: correct at 419x), and a
   *  candidate could find the kept copies and rewrite them (an honest softmax that overwrote
   *  them was judged incorrect). */
  struct audit_state {
    bool on = false;
    std::size_t slots = 0;     ///< what audit_begin() made room for
    std::size_t eligible = 0;  ///< calls an audit may keep (the first run() after a prepare())
    std::optional<std::size_t> last;  ///< the number of the last one counted
    /** The number of the last call counted, until the engine's after_run() of that call (or
     *  audit_end()) draws whether to keep it (audit_consider). */
    std::optional<std::size_t> ran;
    std::vector<kept_call> kept;  ///< at most `slots`
  } audits;
  /** The candidate's side of the next comparison after timing (an audit's kept call, or the
   *  post-timing check's outputs, copied here as soon as the harness made them): compared
   *  where it is (timing_check_finish), never handed to Python again, where a finalizer of the
   *  candidate's, run by a collection in the reference's check forward, could reach it. */
  std::optional<kept_call> held;
  kept_call compared;  ///< what the last comparison's views point into
  /** A trial's outputs, each side's copied here as soon as its forward returned (a Python
   *  candidate's before the reference runs), and compared where they are (trial_finish,
   *  trial_reference_again). While the harness kept the host copies until the comparison, a
   *  thread the candidate started at import waited for the reference's and copied it over its
   *  own: zeros at every shape but the timed one read correct, held-out and stress trials
   *  included. Until the next trial_begin. */
  std::optional<kept_call> trial_reference, trial_candidate;

  /** A kept_call of the host copies the harness described (a list of _describe dicts), one
   *  side's: `owner` is the side blamed for what cannot be copied (the reference's dtypes must
   *  be ones kjudge compares; a candidate's that are not fail as a dtype mismatch). */
  static kept_call copy_of(const py::handle& described, std::size_t sample,
                           error_kind owner = error_kind::candidate);
  /** copy_of into `c`, whose outputs' buffers take the new bytes where they are large enough. */
  static void copy_into(kept_call& c, const py::handle& described, std::size_t sample,
                        error_kind owner = error_kind::candidate);
  /** The candidate runner's copy_last (make_target): its last call's outputs, on the host. */
  py::object audit_copier;

  /** Checks the harness's seal, then draws whether to keep the last call counted. Algorithm R
   *  over the calls counted: the i-th is kept with chance slots/i, in a slot drawn by the timing
   *  key (lane 3), so the kept calls are a uniform draw of the loop's, which the candidate
   *  cannot foresee. The harness copies a drawn call's outputs to the host (its turn's work);
   *  their bytes are copied here at once. The collector is off throughout. */
  void audit_consider();
  std::filesystem::path executable;  ///< the python3 it was started as
  environment_info env;
  void* stream = nullptr;
  py::object problem_error, candidate_error, env_error;
  /** The problem's module and its get_inputs as loaded, and whether its namespace held kjudge's
   *  popcorn_pri then (check_untouched). */
  py::object problem_module, problem_get_inputs;
  bool problem_has_popcorn = false;

  /** Before a trial's or the timing's draws, outside the candidate's code: popcorn_pri, its
   *  methods, the problem's module, its popcorn_pri and its get_inputs are those kjudge loaded.
   *  A candidate that replaced one (type(popcorn_pri).jitter_int = ...) would choose the trials'
   *  sizes or inputs: its error. Held here, where Python code cannot replace the check. */
  void check_untouched() const {
    if (g_popcorn == nullptr) return;
    const py::object current = py::module_::import("_kjudge").attr("popcorn_pri");
    bool same = current.is(g_popcorn->object);
    const py::object methods = py::type::of(g_popcorn->object).attr("__dict__");
    for (const auto& [name, fn] : g_popcorn->methods)
      same = same && methods.attr("get")(name).is(fn);
    if (problem_module) {
      const py::object d = problem_module.attr("__dict__");
      const py::object loaded = harness.attr("_problem");
      same = same && loaded.is(problem_module) &&
             d.attr("get")("get_inputs").is(problem_get_inputs) &&
             (!problem_has_popcorn || d.attr("get")("popcorn_pri").is(g_popcorn->object));
    }
    if (!same)
      KJ_THROW(error_kind::candidate,
               "the candidate replaced kjudge's popcorn_pri, one of its methods, or the problem's "
               "module or get_inputs: the trials' sizes and inputs would be its choice");
  }

  static PyConfig make_config(const session_options& options) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // SIGINT/SIGTERM keep their default: end the worker
    config.faulthandler = 1;  // a segfault in a candidate prints the Python stack before dying
    config.parse_argv = 0;
    const std::string exe = options.python_executable.string();
    PyStatus status = PyConfig_SetBytesString(&config, &config.executable, exe.c_str());
    if (PyStatus_Exception(status)) {
      PyConfig_Clear(&config);
      KJ_THROW(error_kind::python, "cannot set the interpreter to {}", exe);
    }
    if (PySys_AddAuditHook(refuse_audit_hooks, nullptr) != 0) {
      PyConfig_Clear(&config);
      KJ_THROW(error_kind::python, "cannot add kjudge's audit hook");
    }
    return config;
  }

  // scoped_interpreter consumes (and clears) the config during construction.
  explicit impl(PyConfig config) : interpreter(&config, 0, nullptr, false) {}
  ~impl() {
    if (g_seal == &seal) g_seal = nullptr;
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  /** Seals the harness (its code has run, nobody else's yet). */
  void seal_harness() {
    seal.seal(harness, detail::rebound_names(kj::embedded::harness_py));
    g_seal = &seal;
  }

  /** The harness is as sealed; else the error of whoever's code could have changed it. */
  void check_sealed() const {
    const std::string what = seal.changed();
    if (what.empty()) return;
    if (candidate_loaded)
      KJ_THROW(error_kind::candidate,
               "the candidate changed kjudge's harness ({}): its checks and reports would be the "
               "candidate's",
               what);
    KJ_THROW(error_kind::problem, "the problem's code changed kjudge's harness ({})", what);
  }

  /** Runs f, turning the harness's exceptions into kj::error of the matching kind; the harness
   *  is checked against its seal before and after. */
  template <class F>
  auto call(const char* what, F&& f) -> decltype(f()) {
    check_sealed();
    if constexpr (std::is_void_v<decltype(f())>) {
      call_unchecked(what, std::forward<F>(f));
      check_sealed();
    } else {
      auto out = call_unchecked(what, std::forward<F>(f));
      check_sealed();
      return out;
    }
  }

  template <class F>
  auto call_unchecked(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (py::error_already_set& e) {
      std::string message = message_of(e);
      if (e.matches(problem_error)) throw kj::error(error_kind::problem, message);
      if (e.matches(candidate_error)) throw kj::error(error_kind::candidate, message);
      if (e.matches(env_error)) throw kj::error(error_kind::python, message);
      throw kj::error(error_kind::python, fmt::format("{}: {}", what, error_text(e)));
    } catch (py::cast_error& e) {
      throw kj::error(error_kind::python, fmt::format("{}: {}", what, e.what()));
    }
  }
};

namespace {

/** The interpreter and harness of prewarm(), waiting for the session that adopts them. */
std::unique_ptr<session::impl>& prewarmed() {
  static std::unique_ptr<session::impl> p;
  return p;
}

/** Starts the interpreter and runs the harness (its top level imports torch). */
std::unique_ptr<session::impl> start_interpreter(
    const session_options& options, const std::function<void(std::string_view)>& step) {
  step("start_python");
  auto p = std::make_unique<session::impl>(session::impl::make_config(options));
  auto& s = *p;
  step("import_torch");
  try {
    s.harness = py::module_::import("types").attr("ModuleType")("kjudge_harness");
    py::dict scope = s.harness.attr("__dict__");
    const py::object code = py::module_::import("builtins")
                                .attr("compile")(py::str(std::string(embedded::harness_py)),
                                                 "<kjudge harness>", "exec");
    py::module_::import("builtins").attr("exec")(code, scope);
    py::module_::import("sys").attr("modules")["kjudge_harness"] = s.harness;
  } catch (py::error_already_set& e) {
    std::string text = error_text(e);
    if (e.matches(PyExc_ImportError))
      KJ_THROW(error_kind::python,
               "the embedded interpreter ({}) cannot import torch: {}. Pass --python with a "
               "python3 {} whose site-packages hold torch.",
               options.python_executable.string(), text, KJ_PYTHON_VERSION);
    KJ_THROW(error_kind::python, "starting the harness failed: {}", text);
  }
  s.seal_harness();
  s.problem_error = s.harness.attr("ProblemError");
  s.candidate_error = s.harness.attr("CandidateError");
  s.env_error = s.harness.attr("EnvError");
  s.executable = options.python_executable;
  return p;
}

}  // namespace

void prewarm(const session_options& options) {
  prewarmed() = start_interpreter(options, [](std::string_view) {});
  // Everything imported so far stays: keep the collector from touching (and so copying) those
  // objects' pages in every forked child.
  py::module_::import("gc").attr("collect")();
  py::module_::import("gc").attr("freeze")();
}

std::vector<std::filesystem::path> prewarmed_import_dirs() {
  std::vector<std::filesystem::path> out;
  if (!prewarmed()) return out;
  const py::gil_scoped_acquire gil;
  for (const auto& entry : py::module_::import("sys").attr("path")) {
    if (!py::isinstance<py::str>(entry)) continue;
    const std::filesystem::path dir(entry.cast<std::string>());
    std::error_code ec;
    if (!dir.empty() && std::filesystem::is_directory(dir, ec)) out.push_back(dir);
  }
  return out;
}

void before_fork() {
  if (prewarmed()) PyOS_BeforeFork();
}

void after_fork_parent() {
  if (prewarmed()) PyOS_AfterFork_Parent();
}

void after_fork_child() {
  if (!prewarmed()) return;
  PyOS_AfterFork_Child();
  // The interpreter copied the environment when the pool started; the pool has just given this
  // process the requester's. Make os.environ match it, now, while this is the only thread (the
  // worker's threads read the C environment). As bytes: any encoding survives.
  try {
    py::dict now;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const auto eq = entry.find('=');
      if (eq == std::string_view::npos) continue;
      now[py::bytes(std::string(entry.substr(0, eq)))] =
          py::bytes(std::string(entry.substr(eq + 1)));
    }
    py::object environb = py::module_::import("os").attr("environb");
    environb.attr("clear")();
    environb.attr("update")(now);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjudge worker: cannot give Python this process's environment: %s\n",
                 e.what());
    std::fflush(stderr);
    std::_Exit(127);
  }
}

session::session(const session_options& options) {
  const auto step = [&](std::string_view name) {
    if (options.on_step) options.on_step(name);
  };
  if (prewarmed() && prewarmed()->executable == options.python_executable) {
    step("python_prewarmed");
    m_impl = std::move(prewarmed());  // os.environ was synced in after_fork_child
  } else {
    m_impl = start_interpreter(options, step);
  }
  auto& s = *m_impl;
  step("torch_device_setup");
  const auto handle = s.call(
      "setup", [&] { return s.harness.attr("setup")(options.device).cast<std::uintptr_t>(); });
  s.stream = reinterpret_cast<void*>(handle);
  s.seal.pin_items("_generators");  // as setup() left them: what every seeding draws on
  s.call("environment", [&] {
    py::dict d = s.harness.attr("environment")();
    s.env.python_version = d["python_version"].cast<std::string>();
    s.env.python_executable = d["python_executable"].cast<std::string>();
    s.env.torch_version = d["torch_version"].cast<std::string>();
    s.env.torch_cuda_version = d["torch_cuda_version"].cast<std::string>();
    return 0;
  });
}

session::~session() = default;

const environment_info& session::environment() const noexcept {
  return m_impl->env;
}
void* session::stream() const noexcept {
  return m_impl->stream;
}

void session::load_problem(const std::filesystem::path& path, const std::string& sha256) {
  m_impl->call("load_problem", [&] {
    m_impl->harness.attr("load_problem")(path.string(), sha256);
    m_impl->problem_module = m_impl->harness.attr("_problem");
    const py::object d = m_impl->problem_module.attr("__dict__");
    m_impl->problem_get_inputs = d.attr("get")("get_inputs");
    m_impl->problem_has_popcorn =
        g_popcorn != nullptr && d.attr("get")("popcorn_pri").is(g_popcorn->object);
    return py::none();
  });
}

problem_tolerance session::tolerance() const {
  return m_impl->call("tolerance", [&] {
    py::dict d = m_impl->harness.attr("tolerance")();
    problem_tolerance t;
    if (d.contains("atol")) {
      t.has_atol = true;
      t.atol = d["atol"].cast<double>();
    }
    if (d.contains("rtol")) {
      t.has_rtol = true;
      t.rtol = d["rtol"].cast<double>();
    }
    return t;
  });
}

double session::load_candidate(const std::filesystem::path& path) {
  m_impl->candidate_loaded = true;
  return m_impl->call("load_candidate", [&] {
    return m_impl->harness.attr("load_candidate")(path.string()).cast<double>();
  });
}

void session::build_reference(std::uint64_t seed) {
  m_impl->call("build_reference", [&] { return m_impl->harness.attr("build_reference")(seed); });
}

session::weight_copy session::build_candidate(std::uint64_t seed) {
  return m_impl->call("build_candidate", [&] {
    const py::tuple got = m_impl->harness.attr("build_candidate")(seed);
    weight_copy out;
    out.method = utf8_text(got[0]);
    for (const py::handle name : got[1].cast<py::list>()) out.unpaired.push_back(utf8_text(name));
    return out;
  });
}

bool session::use_weights(weights which) {
  return m_impl->call("use_weights", [&] {
    const char* name = which == weights::seed     ? "seed"
                       : which == weights::copied ? "copied"
                                                  : "kept";
    return m_impl->harness.attr("use_weights")(name).cast<bool>();
  });
}

std::vector<tensor_view> session::parameters() {
  return m_impl->call("parameters", [&] { return to_views(m_impl->harness.attr("parameters")()); });
}

trial_inputs_info session::trial_begin(std::uint64_t seed, std::int64_t shape_scale) {
  return m_impl->call("trial_begin", [&] {
    m_impl->check_untouched();
    m_impl->trial_reference.reset();
    m_impl->trial_candidate.reset();
    const py::dict d = m_impl->harness.attr("trial_begin")(seed, shape_scale);
    // With a native candidate the reference ran here: (outputs, descriptions).
    if (d.contains("reference_outputs"))
      m_impl->trial_reference =
          impl::copy_of(d["reference_outputs"].cast<py::tuple>()[1], 0, error_kind::problem);
    return to_inputs_info(d);
  });
}

void session::trial_run_candidate() {
  m_impl->call("trial_run_candidate", [&] {
    const py::tuple t = m_impl->harness.attr("trial_run_candidate")();  // (outputs, descriptions)
    m_impl->trial_candidate = impl::copy_of(t[1], 0);
  });
}

void session::trial_run_reference(std::uint64_t seed, std::int64_t shape_scale) {
  m_impl->call("trial_run_reference", [&] {
    m_impl->check_untouched();
    const py::tuple t = m_impl->harness.attr("trial_run_reference")(seed, shape_scale);
    m_impl->trial_reference = impl::copy_of(t[1], 0, error_kind::problem);
  });
}

void session::trial_inputs_again(std::uint64_t seed, std::int64_t shape_scale) {
  m_impl->call("trial_inputs_again",
               [&] { return m_impl->harness.attr("trial_inputs_again")(seed, shape_scale); });
}

std::vector<tensor_view> session::trial_native_inputs() {
  return m_impl->call("trial_native_inputs",
                      [&] { return to_views(m_impl->harness.attr("trial_native_inputs")()); });
}

std::vector<tensor_view> session::trial_native_outputs() {
  return m_impl->call("trial_native_outputs",
                      [&] { return to_views(m_impl->harness.attr("trial_native_outputs")()); });
}

allocator_memory session::allocator_stats(bool reset_peak) {
  return m_impl->call("allocator statistics", [&] {
    const py::tuple t = m_impl->harness.attr("allocator_memory")(reset_peak);
    return allocator_memory{t[0].cast<std::uint64_t>(), t[1].cast<std::uint64_t>(),
                            t[2].cast<std::uint64_t>(), t[3].cast<std::uint64_t>()};
  });
}

void session::synchronize_candidate() {
  m_impl->call("synchronize_candidate",
               [&] { return m_impl->harness.attr("synchronize_candidate")(); });
}

namespace {

/** An expansion kept as the elements its strides reach (copy_into), written out: contiguous. */
void write_out(session::impl::kept_call::output& o, std::size_t element) {
  std::size_t n = 1;
  for (const auto d : o.shape) n *= static_cast<std::size_t>(d);
  std::vector<std::byte> out(n * element);
  kj::gather_strided(o.bytes.data(), o.shape, o.strides, element, out.data());
  o.bytes = std::move(out);
  o.strides.clear();
}

/** A kept output as the comparison reads it: its bytes where C++ holds them, contiguous. An
 *  expansion is written out first where `write` (it is compared element by element), and read
 *  as the elements it reaches otherwise (reached): a wrong shape is said with no more memory
 *  than the candidate gave the output. */
tensor_view kept_view(session::impl::kept_call::output& o, bool write) {
  tensor_view v;
  v.shape = o.shape;
  v.strides.assign(o.shape.size(), 1);
  for (std::size_t d = o.shape.size(); d-- > 1;)
    v.strides[d - 1] = v.strides[d] * std::max<std::int64_t>(o.shape[d], 1);
  const auto t = dtype_from_string(o.dtype);
  if (!t) {
    v.unsupported_dtype = o.dtype;
    return v;
  }
  v.type = *t;
  if (!o.strides.empty()) {
    if (write)
      write_out(o, element_size(*t));
    else
      v.reached = o.bytes.size() / element_size(*t);
  }
  v.data = const_cast<std::byte*>(o.bytes.data());  // read only: the comparison's views
  v.python_number = o.python_number;
  return v;
}

/** Views of a kept call's outputs (valid while it is kept, unchanged). With `expected` (the
 *  reference's outputs they are compared with), an expansion is written out only where its
 *  shape and dtype are those of the same output of `expected`: the only case its elements are
 *  compared. */
std::vector<tensor_view> kept_views(session::impl::kept_call& c,
                                    const std::vector<tensor_view>* expected = nullptr) {
  std::vector<tensor_view> out;
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    auto& o = c.outputs[i];
    const bool compared =
        expected == nullptr || (i < expected->size() && (*expected)[i].shape == o.shape &&
                                dtype_from_string(o.dtype) == (*expected)[i].type);
    out.push_back(kept_view(o, compared));
  }
  return out;
}

/** The harness's {reference, candidate, inputs_modified, *_ms} dict (trial and timing check). */
trial_outputs to_trial_outputs(const py::dict& d) {
  trial_outputs out;
  if (d.contains("reference")) out.reference = to_views(d["reference"]);
  if (d.contains("candidate"))
    out.candidate = to_views(d["candidate"], error_kind::candidate, /*compared=*/true);
  out.inputs_modified = d["inputs_modified"].cast<std::vector<int>>();
  if (d.contains("reference_inputs_modified"))
    out.reference_inputs_modified = d["reference_inputs_modified"].cast<std::vector<int>>();
  if (d.contains("inputs_modified_as_reference"))
    out.inputs_modified_as_reference = d["inputs_modified_as_reference"].cast<std::vector<int>>();
  out.reference_ms = d["reference_ms"].cast<double>();
  out.candidate_ms = d["candidate_ms"].cast<double>();
  return out;
}

}  // namespace

trial_outputs session::trial_finish() {
  return m_impl->call("trial_finish", [&] {
    // ({...}, outputs, their descriptions): a native candidate's outputs, copied to the host
    // there; None where a Python candidate's were copied as its forward returned.
    const py::tuple t = m_impl->harness.attr("trial_finish")();
    trial_outputs out = to_trial_outputs(t[0]);
    if (!t[2].is_none()) m_impl->trial_candidate = impl::copy_of(t[2], 0);
    if (!m_impl->trial_reference || !m_impl->trial_candidate)
      KJ_THROW(error_kind::internal, "the trial's {} outputs were not copied",
               m_impl->trial_reference ? "candidate's" : "reference's");
    out.reference = kept_views(*m_impl->trial_reference);
    out.candidate = kept_views(*m_impl->trial_candidate, &out.reference);
    return out;
  });
}

trial_outputs session::trial_reference_again(std::uint64_t seed, std::int64_t shape_scale) {
  return m_impl->call("trial_reference_again", [&] {
    m_impl->check_untouched();
    // None where the trial was begun again since and its reference did not run (the retry with
    // the candidate's own weights, whose candidate raised first): nothing to compare with, and
    // the caller takes the problem's error as no evidence either way.
    if (!m_impl->trial_reference)
      KJ_THROW(error_kind::problem,
               "the reference's first outputs of the trial are no longer at hand");
    // (the second run's outputs, their descriptions): copied here, as the first run's were.
    const py::tuple t = m_impl->harness.attr("trial_reference_again")(seed, shape_scale);
    trial_outputs out = to_trial_outputs(t[0]);
    m_impl->trial_candidate = impl::copy_of(t[2], 0, error_kind::problem);
    out.reference = kept_views(*m_impl->trial_reference);
    out.candidate = kept_views(*m_impl->trial_candidate, &out.reference);
    return out;
  });
}

timing_inputs_info session::timing_setup(std::size_t max_sets, std::uint64_t data_seed,
                                         std::uint64_t key, std::uint64_t byte_budget,
                                         bool native_per_set) {
  return m_impl->call("timing_setup", [&] {
    m_impl->check_untouched();
    m_impl->trial_reference.reset();  // the last trial's outputs: timing needs none of them
    m_impl->trial_candidate.reset();
    g_keyed.key = key;  // kept here: the harness asks for hashes (keyed_allowance)
    const py::object d =
        m_impl->harness.attr("timing_setup")(max_sets, data_seed, byte_budget, native_per_set);
    timing_inputs_info out;
    out.shapes = to_inputs_info(d);
    out.sets = d["sets"].cast<std::size_t>();
    out.bytes_per_set = d["bytes_per_set"].cast<std::uint64_t>();
    out.output_bytes = d["output_bytes"].cast<std::uint64_t>();
    out.native_buffers_per_set = d["native_buffers_per_set"].cast<bool>();
    out.shrink_only_inputs = d["shrink_only_inputs"].cast<std::vector<std::int64_t>>();
    out.varied_inputs = d["varied_inputs"].cast<std::size_t>();
    return out;
  });
}

namespace {

/** Calls the harness's runner closure for one side; the GIL is held by the worker's only thread. */
class python_target final : public measure::target {
 public:
  /** `fns`: the harness's make_runner tuple (prepare, run, capture, run_graph, drop, ...);
   *  `impl`: the session, whose seal it checks before every prepare(), whose audits of the
   *  candidate's calls it counts, and whose CandidateError is the candidate's whichever side
   *  raised it (its changes to what the reference runs with are found in the reference's
   *  prepare()). */
  python_target(const py::tuple& fns, side which, std::size_t sets, session::impl& impl)
      : m_side(which),
        m_sets(sets),
        m_impl(impl),
        m_audits(which == side::candidate ? &impl.audits : nullptr),
        m_prepare(fns[0]),
        m_run(fns[1]),
        m_capture(fns[2]),
        m_run_graph(fns[3]),
        m_drop(fns[4]) {}

  /** Rewrites this side's copy of the sample's input set (outside the timed region). */
  void prepare(std::size_t sample_index) override {
    // The harness as sealed, before every prepare() of either side (a drawn call was copied in
    // its after_run()).
    as_check([&] { m_impl.check_sealed(); });
    {
      const keyed_allowance allow({{sample_index, seed_lane}, {sample_index, factor_lane(m_side)}});
      guarded("preparing inputs for", [&] { m_prepare(sample_index, set_of(sample_index)); });
    }
    m_prepared = sample_index;
  }

  void run() override {
    // An audit may keep the first run() after a prepare(), which starts from that number's
    // generator state, unless it repeats the number of the one before it (a turn's opening
    // call); not the eager forward after a replay, which draws where the replay left them.
    if (m_audits != nullptr) {
      const bool counted = m_audits->on && m_prepared && m_prepared != m_audits->last;
      if (counted) {
        ++m_audits->eligible;
        m_audits->last = m_prepared;
      }
      m_audits->ran = counted ? m_prepared : std::nullopt;
    }
    m_prepared.reset();
    guarded("timing", [&] {
      m_run();
      // Python signal handlers and pending calls (Py_AddPendingCall) that came due during the
      // call run in it, not in kjudge's Python after it (docs/methodology.md, the audits).
      if (Py_MakePendingCalls() != 0) throw py::error_already_set();
    });
  }

  /** The candidate's call just timed is copied here, if drawn, before anything else runs: a
   *  C signal handler of the candidate's, on a timer it armed in its forward, ran on this thread
   *  after the clock stopped and wrote the softmax into the empty output the call had returned
   *  before kjudge copied it at the next prepare(): correct at 22-57x with the timed calls doing
   *  nothing (the worker's thread now keeps every signal blocked while it times: worker.cpp).
   *  Before that, a finalizer of the candidate's, run by a collection in the reference's turn,
   *  wrote the right answer into its zeros (correct, 40 of the loop's calls zeros) while the
   *  copy waited for its next prepare(). */
  void after_run() override {
    if (m_audits != nullptr) as_check([&] { m_impl.audit_consider(); });
  }

  /** PyTorch's CUDAGraph captures on a blocking stream of kjudge's (work a forward sends to the
   *  legacy default stream instead, e.g. a load_inline kernel launched without a stream, then
   *  fails the capture rather than running outside the graph); replays go to torch's current
   *  stream, which is the timing stream. */
  [[nodiscard]] std::string capture_graphs() override {
    if (!m_capture_stream) m_capture_stream.emplace(cudaStreamDefault);
    const auto handle = reinterpret_cast<std::uintptr_t>(m_capture_stream->get());
    std::string why;
    guarded("capturing", [&] { why = utf8_text(m_capture(handle)); });
    return why;
  }

  void run_graph() override {
    m_prepared.reset();
    guarded("replaying", [&] { m_run_graph(); });
  }

  void drop_graphs() override {
    guarded("dropping the graphs of", [&] { m_drop(); });
  }

  [[nodiscard]] std::size_t input_sets() const override { return m_sets; }
  /** The set prepare() has the harness rewrite: the reference's sample n on set (n + K/2) mod K,
   *  so that both sides' samples of one number are on different sets (on one set, the output the
   *  harness kept of the reference's, rescaled by the ratio of the sides' inputs, was the
   *  candidate's answer: correct at 1.53x, examples/faulty/takes_reference_output.py). */
  [[nodiscard]] std::size_t set_of(std::size_t sample_index) const override {
    if (m_sets == 0) return 0;
    return (sample_index + (m_side == side::reference ? m_sets / 2 : 0)) % m_sets;
  }
  [[nodiscard]] std::string name() const override {
    return m_side == side::reference ? "reference" : "candidate";
  }
  double take_check_seconds() override { return std::exchange(m_check_s, {}).count(); }

 private:
  /** f(), its time counted as kjudge's checks' (take_check_seconds), not this side's. */
  template <class F>
  void as_check(F&& f) {
    const auto check_start = std::chrono::steady_clock::now();
    f();
    m_check_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start);
  }

  template <class F>
  void guarded(const char* what, F&& f) {
    try {
      f();
    } catch (py::error_already_set& e) {
      const std::string text = error_text(e);
      // Timing's inputs are not the trials': the nominal sizes, each sample's floating-point
      // values rescaled (docs/methodology.md, Timing 1). Said, since a forward that passed every
      // trial and fails here fails on that.
      if (m_side == side::reference && !e.matches(m_impl.candidate_error))
        KJ_THROW(error_kind::problem,
                 "the reference failed while {} it: {} (timing runs it at the nominal sizes, on "
                 "input sets whose floating-point values are rescaled for every sample: a "
                 "forward that needs the values get_inputs() drew, floats used as indices say, "
                 "cannot be timed so; docs/methodology.md, Timing 1)",
                 what, text);
      KJ_THROW(error_kind::candidate, "the candidate failed while {} it: {}", what, text);
    }
  }

  side m_side;
  std::size_t m_sets;
  session::impl& m_impl;
  session::impl::audit_state* m_audits;   ///< the candidate's, counted; nullptr for the reference
  std::optional<std::size_t> m_prepared;  ///< the number prepare() made current, until used
  std::chrono::duration<double> m_check_s{0.0};  ///< audit copies since take_check_seconds()
  py::object m_prepare, m_run, m_capture, m_run_graph, m_drop;
  std::optional<cuda::stream> m_capture_stream;
};

}  // namespace

std::unique_ptr<measure::target> session::make_target(side s) {
  const auto sets = timing_sets();
  if (sets == 0) KJ_THROW(error_kind::internal, "make_target before timing_setup");
  py::tuple fns = m_impl->call("make_runner", [&] {
    return py::tuple(
        m_impl->harness.attr("make_runner")(s == side::reference ? "reference" : "candidate"));
  });
  for (const auto& fn : fns) m_impl->seal.add_closure(fn);
  if (s == side::candidate) m_impl->audit_copier = fns[5];
  return std::make_unique<python_target>(fns, s, sets, *m_impl);
}

std::size_t session::cached_free_bytes() const {
  return m_impl->call("cached free bytes", [&] {
    return m_impl->harness.attr("cached_free_bytes")().cast<std::size_t>();
  });
}

std::size_t session::timing_sets() const {
  return m_impl->call("timing sets", [&] { return py::len(m_impl->harness.attr("_timing_base")); });
}

std::size_t session::timing_refresh(side s, std::size_t sample) {
  const keyed_allowance allow({{sample, factor_lane(s)}});
  return m_impl->call("refresh", [&] {
    return m_impl->harness.attr("refresh")(s == side::reference ? "reference" : "candidate", sample)
        .cast<std::size_t>();
  });
}

std::size_t session::timing_check_first_sample() const {
  return m_impl->call("timing_check_first_sample", [&] {
    return m_impl->harness.attr("timing_check_first_sample")().cast<std::size_t>();
  });
}

std::size_t session::timing_check_begin(std::size_t sample) {
  const keyed_allowance allow({{sample, seed_lane}, {sample, candidate_factor_lane}});
  return m_impl->call("timing_check_begin", [&] {
    return m_impl->harness.attr("timing_check_begin")(sample).cast<std::size_t>();
  });
}

void session::timing_check_candidate(std::size_t sample) {
  m_impl->call("timing_check_candidate", [&] {
    const py::object runners = m_impl->harness.attr("_runners");
    // None where nothing was timed (--no-timing's check at the nominal sizes).
    if (!runners.contains("candidate")) {
      const py::tuple made = m_impl->harness.attr("make_runner")("candidate");
      for (const auto& fn : made) m_impl->seal.add_closure(fn);
    }
    const py::tuple fns = runners["candidate"];
    try {
      {
        const keyed_allowance allow({{sample, seed_lane}, {sample, candidate_factor_lane}});
        fns[0](sample);  // prepare
      }
      fns[1]();  // run
    } catch (py::error_already_set& e) {
      if (e.matches(m_impl->candidate_error)) throw;
      KJ_THROW(error_kind::candidate, "ModelNew.forward (timing check) raised: {}", error_text(e));
    }
    const py::tuple t = m_impl->harness.attr("timing_check_collect_candidate")();
    m_impl->held = impl::copy_of(t[1], sample);
  });
}

void session::timing_check_candidate_graph(std::size_t set, std::size_t sample) {
  m_impl->call("timing_check_candidate_graph", [&] {
    const py::tuple t = m_impl->harness.attr("timing_check_candidate_graph")(set);
    m_impl->held = impl::copy_of(t[1], sample);
  });
}

void session::timing_check_reference_graph(std::size_t sample) {
  const keyed_allowance allow({{sample, candidate_factor_lane}});
  m_impl->call("timing_check_reference_graph",
               [&] { return m_impl->harness.attr("timing_check_reference_graph")(sample); });
}

void session::timing_check_reference_again(std::size_t sample) {
  const keyed_allowance allow({{sample, candidate_factor_lane}});
  m_impl->call("timing_check_reference_again",
               [&] { return m_impl->harness.attr("timing_check_reference_again")(sample); });
}

trial_outputs session::timing_check_finish(check_source source, std::size_t sample) {
  // The candidate's side is what C++ holds (held): Python runs the reference alone, and no
  // code of the candidate's (a finalizer run by a collection in the reference's forward) can
  // reach those bytes before they are compared.
  auto& held = m_impl->held;
  if (source == check_source::candidate) {
    if (!held || held->sample != sample)
      KJ_THROW(error_kind::internal, "the candidate's outputs of sample {} were not copied",
               sample);
    m_impl->compared = std::move(*held);
    held.reset();
  }
  const char* name = source == check_source::native            ? "native"
                     : source == check_source::candidate       ? "held"
                     : source == check_source::reference_graph ? "reference_graph"
                                                               : "reference_again";
  const keyed_allowance allow({{sample, candidate_factor_lane}});
  auto out = m_impl->call("timing_check_finish", [&] {
    return to_trial_outputs(m_impl->harness.attr("timing_check_finish")(name, sample));
  });
  if (source == check_source::candidate)
    out.candidate = kept_views(m_impl->compared, &out.reference);
  return out;
}

std::vector<state_change> session::candidate_changes(bool after_timing) {
  return m_impl->call("candidate_changes", [&] {
    std::vector<state_change> out;
    for (const auto& item : m_impl->harness.attr("candidate_changes")(after_timing)) {
      const auto pair = item.cast<py::tuple>();
      out.push_back({utf8_text(pair[0]), pair[1].cast<bool>()});
    }
    return out;
  });
}

void session::thread_turns_begin() {
  m_impl->call("thread_turns_begin", [&] { m_impl->harness.attr("thread_turns_begin")(); });
}

thread_turns session::thread_turns_end() {
  return m_impl->call("thread_turns_end", [&] {
    thread_turns out;
    const py::dict turns = m_impl->harness.attr("thread_turns_end")();
    for (auto [name, side] :
         {std::pair{"reference", &out.reference}, std::pair{"candidate", &out.candidate}}) {
      if (!turns.contains(name)) continue;
      const auto entry = turns[name].cast<py::tuple>();
      side->wall_s = entry[0].cast<double>();
      for (const auto& item : entry[1]) {
        const auto t = item.cast<py::tuple>();
        side->threads.push_back({utf8_text(t[0]), t[1].cast<long>(), t[2].cast<double>(),
                                 t.size() > 3 && t[3].cast<bool>()});
      }
    }
    return out;
  });
}

background_wait session::background_quiet(double max_s, double window_s) {
  return m_impl->call("background_quiet", [&] {
    background_wait out;
    const auto r = m_impl->harness.attr("background_quiet")(max_s, window_s).cast<py::tuple>();
    out.windows = r[0].cast<int>();
    out.waited_s = r[1].cast<double>();
    out.quiet = r[2].cast<bool>();
    for (const auto& item : r[3]) {
      const auto t = item.cast<py::tuple>();
      out.busy.push_back(
          {utf8_text(t[0]), t[1].cast<long>(), t[2].cast<double>(), t[3].cast<bool>()});
    }
    return out;
  });
}

session::impl::kept_call session::impl::copy_of(const py::handle& described, std::size_t sample,
                                                error_kind owner) {
  kept_call c;
  copy_into(c, described, sample, owner);
  return c;
}

void session::impl::copy_into(kept_call& c, const py::handle& described, std::size_t sample,
                              error_kind owner) {
  c.sample = sample;
  c.why.clear();
  std::vector<kept_call::output> old = std::move(c.outputs);
  c.outputs.clear();
  std::size_t i = 0;
  const bool candidate = owner == error_kind::candidate;
  for (const auto& d : described) {
    const tensor_view v = to_view(d, owner, /*compared=*/candidate);
    kept_call::output o{d["dtype"].cast<std::string>(),
                        v.shape,
                        i < old.size() ? std::move(old[i].bytes) : std::vector<std::byte>{},
                        v.python_number,
                        {}};
    ++i;
    if (v.unsupported_dtype.empty() && v.numel() > 0) {
      if (v.data == nullptr)
        KJ_THROW(owner, "an output of the {} ({} elements) has no memory to copy",
                 candidate ? "candidate" : "reference", v.numel());
      // An expansion keeps the elements its strides reach: written out, 2^28 elements of one
      // float were copied here before their shape was compared.
      const std::size_t reach =
          v.strides.size() == v.shape.size() ? kj::strided_reach(v.shape, v.strides) : v.numel();
      if (reach < v.numel()) o.strides = v.strides;
      const std::size_t n = std::min(reach, v.numel()) * element_size(v.type);
      const auto* p = static_cast<const std::byte*>(v.data);
      // A plain CPU output is read here first, straight from the candidate's memory
      // (_host_at_once): with every signal blocked, so that a page it left unreadable ends the
      // worker instead of running a handler of its own that fills it now (runner/fence.hpp).
      const kj::runner::signals_blocked unhandled;
      o.bytes.assign(p, p + n);  // within the capacity it had: no new pages
    } else {
      o.bytes.clear();
    }
    c.outputs.push_back(std::move(o));
  }
}

void session::impl::audit_consider() {
  // The harness's seal is checked before its code copies the call, and the collector stays
  // off from there to the copy's end: a collection ran the candidate's code first (gc_paused).
  const gc_paused paused;
  check_sealed();
  if (!audits.ran || !audit_copier) return;
  const std::size_t sample = *std::exchange(audits.ran, std::nullopt);
  std::size_t slot = audits.kept.size();
  if (slot >= audits.slots) {
    slot = keyed_hash(g_keyed.key, sample, audit_lane) % audits.eligible;
    if (slot >= audits.slots) return;
  }
  // A replaced slot's buffers take the new copy (no fresh pages to fault in).
  kept_call c = slot < audits.kept.size() ? std::move(audits.kept[slot]) : kept_call{};
  try {
    const py::tuple t = audit_copier();  // (hosts, their descriptions, why)
    if (t[1].is_none()) {
      c = kept_call{sample, utf8_text(t[2]), {}};
    } else {
      copy_into(c, t[1], sample);
    }
  } catch (py::error_already_set& e) {
    if (e.matches(problem_error)) throw kj::error(error_kind::problem, message_of(e));
    KJ_THROW(error_kind::candidate,
             "copying the outputs of the candidate's call for an audit failed: {}", error_text(e));
  }
  if (slot == audits.kept.size()) {
    audits.kept.push_back(std::move(c));
  } else {
    audits.kept[slot] = std::move(c);
  }
}

void session::audit_begin() {
  auto& a = m_impl->audits;
  a = {};
  a.slots = m_impl->call("audit_slots",
                         [&] { return m_impl->harness.attr("audit_slots")().cast<std::size_t>(); });
  a.on = true;
}

std::size_t session::audit_end() {
  m_impl->audits.on = false;
  m_impl->audit_consider();  // a counted call the engine timed without after_run(): none now
  return m_impl->audits.kept.size();
}

std::pair<std::size_t, std::string> session::timing_audit_begin(std::size_t i) {
  auto& c = m_impl->audits.kept.at(i);
  const keyed_allowance allow({{c.sample, seed_lane}});
  m_impl->call("timing_audit_begin",
               [&] { return m_impl->harness.attr("timing_audit_begin")(c.sample); });
  std::pair<std::size_t, std::string> out{c.sample, c.why};
  if (c.why.empty()) {
    m_impl->held = std::move(c);
  } else {
    m_impl->held.reset();
  }
  c = {};
  return out;
}

std::vector<tensor_view> session::timing_native_inputs(std::size_t set) {
  return m_impl->call("timing_native_inputs",
                      [&] { return to_views(m_impl->harness.attr("timing_native_inputs")(set)); });
}

std::vector<tensor_view> session::timing_native_params(std::size_t set) {
  return m_impl->call("timing_native_params",
                      [&] { return to_views(m_impl->harness.attr("timing_native_params")(set)); });
}

std::vector<tensor_view> session::timing_native_outputs(std::size_t set) {
  return m_impl->call("timing_native_outputs",
                      [&] { return to_views(m_impl->harness.attr("timing_native_outputs")(set)); });
}

}  // namespace kj::python
