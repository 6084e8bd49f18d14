#pragma once
/** @file The embedded-interpreter bridge. The worker drives a problem and a candidate through this
 *  interface without seeing a Python type; only this folder includes Python.h. One `session` per
 *  worker process: it owns the interpreter, and everything it returns (tensor views, host outputs)
 *  stays valid until the next call that replaces it (noted per function).
 *
 *  Errors: Python exceptions become kj::error with kind `problem` (the reference or its inputs
 *  failed), `candidate` (ModelNew failed: constructing, running, wrong return type) or `python`
 *  (the environment: torch missing, CUDA unavailable). The message carries the traceback's tail. */

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/dtype.hpp>
#include <kjudge/measure/target.hpp>

namespace kj::python {

struct session_options {
  std::filesystem::path python_executable;  ///< a python3 whose site-packages hold torch
  std::string device = "cuda";              ///< "cuda" or "cpu"
  /** Called at the start of each step of the constructor, with the step's name: "start_python"
   *  (the interpreter), "import_torch" (the harness, whose top level imports torch),
   *  "torch_device_setup" (harness.setup: torch.cuda.init and a first tensor on the device, then
   *  the version query). Each step lasts until the next call, the last until the constructor
   *  returns. In a process forked from one that called prewarm(), the first two are replaced
   *  by "python_prewarmed". May be empty. */
  std::function<void(std::string_view step)> on_step;
};

/** For the worker pool (kjudge/runner/pool.hpp): starts the interpreter and runs the harness
 *  (which imports torch) in this process now, without touching CUDA, so that a session created
 *  later in a process forked from this one starts from there ("python_prewarmed") instead of
 *  paying 3-5 s again. Uses options.python_executable; throws kj::error(python) like session. */
void prewarm(const session_options& options);

/** After prewarm(): the directories on the interpreter's sys.path (site-packages, the
 *  standard library, PYTHONPATH entries) that exist, where installing or removing a package
 *  changes the directory. Empty before prewarm. */
std::vector<std::filesystem::path> prewarmed_import_dirs();

/** Python's fork protocol (PyOS_BeforeFork, PyOS_AfterFork_Parent, PyOS_AfterFork_Child), for a
 *  process that prewarmed and forks children that will use it. No-ops before prewarm. */
void before_fork();
void after_fork_parent();
void after_fork_child();

struct environment_info {
  std::string python_version, python_executable, torch_version, torch_cuda_version;
};

/** A tensor as the native ABI and the comparison code see it (device or host memory). */
struct tensor_view {
  void* data = nullptr;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  ///< in elements
  std::string name;
  /** A candidate output of a dtype kjudge does not compare (complex, float8, uint16 ...): its
   *  torch name; `data` is then null and `type` meaningless. The comparison fails it as a dtype
   *  mismatch. */
  std::string unsupported_dtype;
  /** A trial output that its side returned as a number, not a tensor: what it was ("a Python
   *  float"), compared as a 0-dim tensor of `type` (float64, int64 or bool). Empty otherwise. */
  std::string python_number;
  /** check::host_tensor::reached: nonzero where `data` holds only the elements a candidate
   *  output's strides reach (an expansion whose shape or dtype is not the reference's, kept
   *  so). */
  std::size_t reached = 0;
  [[nodiscard]] std::size_t numel() const noexcept;
};

/** What the reference and the candidate returned for one trial, copied to host memory. */
struct trial_outputs {
  std::vector<tensor_view> reference;  ///< contiguous host copies
  std::vector<tensor_view> candidate;
  std::vector<int> inputs_modified;
  std::vector<int> reference_inputs_modified;  ///< the reference's own (trial_finish only)
  /** Of inputs_modified, those the reference changed too, to the same values. */
  std::vector<int> inputs_modified_as_reference;
  double reference_ms = 0, candidate_ms = 0;
};

/** One change a Python candidate made to torch's global state (harness.py, "the candidate's
 *  reach"). */
struct state_change {
  std::string text;       ///< e.g. "torch.backends.cuda.matmul.allow_tf32: False -> True"
  bool by_torch = false;  ///< a binding replaced by torch's own code (torch.compile does)
};

/** A Python thread other than the one that runs the forwards, and the CPU time it used. */
struct thread_cpu {
  std::string name;
  long tid = 0;          ///< the kernel's thread id (a process's id, for a process)
  double cpu_s = 0.0;    ///< user + system CPU seconds
  bool process = false;  ///< a process the worker started (or one of its descendants)
};

/** One side's turns while both were timed: their wall time, and the CPU each Python thread
 *  besides the worker's own used during them. */
struct side_turns {
  double wall_s = 0.0;
  std::vector<thread_cpu> threads;
};

struct thread_turns {
  side_turns reference, candidate;
};

/** session::background_quiet's wait: how many windows and how long, whether the threads and
 *  processes it watched went quiet, and the CPU each that used any used over it (those that
 *  ended during it too). */
struct background_wait {
  int windows = 0;  ///< windows read (0: nothing to watch; 1: quiet in the first)
  double waited_s = 0.0;
  bool quiet = true;
  std::vector<thread_cpu> busy;
};

struct trial_inputs_info {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::string> dtypes;
  std::map<std::string, std::int64_t> jitter;  ///< nominal -> drawn, as strings of the nominal
  /** The nominal sizes among `jitter` pinned to their value while the models were built (or at
   *  the problem's import): never jittered, never scaled by a stress trial. */
  std::vector<std::int64_t> pinned;
};

struct timing_inputs_info {
  trial_inputs_info shapes;  ///< of every set (the nominal sizes)
  std::size_t sets = 0;
  std::uint64_t bytes_per_set = 0;  ///< tensor inputs of one set
  std::uint64_t output_bytes = 0;   ///< the reference's outputs on one set
  /** A native candidate's parameters and outputs are copied per set (else all sets share one). */
  bool native_buffers_per_set = false;
  /** Floating-point inputs whose values lay within [-1, 1] in every set: rescaled by factors of
   *  at most 1 only (kept in their domain). */
  std::vector<std::int64_t> shrink_only_inputs;
  /** The inputs the rewrite before each sample changes (non-empty floating-point tensors): with
   *  none, a set's samples all see the same values. */
  std::size_t varied_inputs = 0;
};

/** Tolerance the problem file asks for (module constants KJUDGE_ATOL / KJUDGE_RTOL), if any. */
struct problem_tolerance {
  bool has_atol = false, has_rtol = false;
  double atol = 0, rtol = 0;
};

enum class side { reference, candidate };

/** torch's caching-allocator statistics on the current device, bytes (all 0 on the CPU). */
struct allocator_memory {
  std::uint64_t allocated = 0;
  std::uint64_t peak_allocated = 0;  ///< since the last reset
  std::uint64_t reserved = 0;
  std::uint64_t allocated_ever = 0;  ///< the bytes of every allocation so far (a counter)
};

class session {
 public:
  /** Starts the interpreter, imports torch and, for "cuda", initialises the device; reports each
   *  step to options.on_step. */
  explicit session(const session_options& options);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  [[nodiscard]] const environment_info& environment() const noexcept;
  /** torch's current CUDA stream (as cudaStream_t), or nullptr on CPU. */
  [[nodiscard]] void* stream() const noexcept;

  /** Executes the problem file with `popcorn_pri` injected, from its bytes as read then (no
   *  bytecode cache), which must hash to `sha256` where it is not empty. Throws
   *  kj::error(problem). */
  void load_problem(const std::filesystem::path& path, const std::string& sha256 = "");
  [[nodiscard]] problem_tolerance tolerance() const;

  /** Executes a Python candidate file (load_inline / Triton builds happen here); returns seconds
   *  spent. Throws kj::error(candidate) with the full build output on failure. */
  double load_candidate(const std::filesystem::path& path);

  /** Builds Model under `seed` (KernelBench order). Throws kj::error(problem). */
  void build_reference(std::uint64_t seed);
  /** How the reference's weights went into the candidate. */
  struct weight_copy {
    /** "by_name", "by_value", "by_name_end", "by_order", "by_shape", "partial", "seed_only",
     *  "none", or "native" when no Python candidate is loaded. */
    std::string method;
    /** The reference's parameters (a name of each) that kept the candidate's seeded values
     *  ("partial", "seed_only"). */
    std::vector<std::string> unpaired;
  };
  /** Builds ModelNew under the same seed and copies the reference's state_dict into it. */
  weight_copy build_candidate(std::uint64_t seed);
  /** Which Python candidate use_weights() puts in force. */
  enum class weights {
    seed,    ///< a fresh ModelNew built under the seed alone (its own weights, KernelBench's rule)
    copied,  ///< back to the one with the reference's weights copied in
    kept,    ///< the fresh one kept; the copied one let go
  };
  /** See `weights`. False where the copy changed none of the candidate's tensors (nothing to
   *  try). Throws kj::error(candidate) (a constructor that fails the second time). */
  bool use_weights(weights which);

  /** Reference parameters and buffers in state_dict order (device memory, contiguous). Valid until
   *  build_models is called again. */
  [[nodiscard]] std::vector<tensor_view> parameters();

  // One correctness trial: begin (inputs; with a native candidate also the reference, whose
  // output shapes its buffers take) -> candidate (Python or native) -> with a Python candidate,
  // the reference -> finish. A Python candidate runs before the reference, so that no output of
  // the reference for the trial's inputs exists in the interpreter it shares for it to return.
  trial_inputs_info trial_begin(std::uint64_t seed, std::int64_t shape_scale);
  /** Runs the Python candidate on its own clone of the inputs. Throws kj::error(candidate). */
  void trial_run_candidate();
  /** After a Python candidate (trial_begin ran it for a native one): runs the reference on the
   *  trial's inputs drawn again from `seed` and `shape_scale` (trial_begin's), checked against
   *  the pristine copy. Throws kj::error(problem), or kj::error(candidate) when the candidate
   *  changed that copy. */
  void trial_run_reference(std::uint64_t seed, std::int64_t shape_scale);
  /** After trial_begin with no candidate loaded (the worker's check of a problem error): the
   *  trial's inputs drawn again from `seed` and `shape_scale`, which must equal the first
   *  draw, as trial_run_reference requires. Throws kj::error(problem) where they differ. */
  void trial_inputs_again(std::uint64_t seed, std::int64_t shape_scale);
  /** For native candidates: clones of the trial inputs (contiguous) and fresh outputs shaped like
   *  the reference's, filled with NaN (0x5A bytes for integer types). Valid until trial_finish. */
  [[nodiscard]] std::vector<tensor_view> trial_native_inputs();
  [[nodiscard]] std::vector<tensor_view> trial_native_outputs();
  /** Allocator statistics; `reset_peak` resets the peak counter first (so the peak returned is
   *  the current allocation, the baseline of the next forward). */
  allocator_memory allocator_stats(bool reset_peak);
  /** Synchronises the device; a CUDA error here is the candidate's (kj::error(candidate)). */
  void synchronize_candidate();
  /** Copies both sides' outputs to host and reports inputs the candidate modified. Views are valid
   *  until the next trial_begin. */
  trial_outputs trial_finish();
  /** After trial_finish: the reference run again on the trial's inputs drawn again from `seed`
   *  and `shape_scale` (trial_begin's), its first run's outputs as `reference`, this run's as
   *  `candidate`. Views valid until the next trial_begin. Throws kj::error(problem). */
  trial_outputs trial_reference_again(std::uint64_t seed, std::int64_t shape_scale);

  /** Timing inputs at the nominal sizes (no jitter), one set per seed: as many as fit in
   *  `byte_budget`, at least 2, at most `max_sets`. `native_per_set`: a native candidate's
   *  parameters and outputs may be copied per set (cold timing; see native_buffers_per_set).
   *  `key` (secret) keys the timed samples' generator seeds and input factors. */
  timing_inputs_info timing_setup(std::size_t max_sets, std::uint64_t data_seed, std::uint64_t key,
                                  std::uint64_t byte_budget, bool native_per_set);
  /** A target for the reference or the Python candidate: prepare(sample) rewrites its own copy of
   *  the sample's input set (float tensors scaled by a per-sample factor), run() calls it. */
  [[nodiscard]] std::unique_ptr<measure::target> make_target(side s);
  [[nodiscard]] std::size_t timing_sets() const;
  /** Device memory torch's caching allocator holds but does not use (0 on the CPU): free to
   *  kjudge's next allocations, though cudaMemGetInfo counts it as taken. */
  [[nodiscard]] std::size_t cached_free_bytes() const;
  /** Rewrites side `s`'s copy of set sample % sets for `sample`; returns the set index. */
  std::size_t timing_refresh(side s, std::size_t sample);
  /** After timing: both sides once more on a fresh rewrite (set returned by begin), outputs to
   *  host for comparison. A candidate replaying results cached during timing fails this. */
  std::size_t timing_check_begin(std::size_t sample);
  /** The post-timing check's first sample number: a multiple of the sets past every number the
   *  timed samples used (the check's samples continue theirs, seeds and factors alike). */
  [[nodiscard]] std::size_t timing_check_first_sample() const;
  /** The Python candidate's forward for the check's `sample`, called as a timed sample is: its
   *  runner's prepare and run (the same functions, from C++, nothing of kjudge's Python above
   *  them), then its outputs copied to the host and from there into C++ at once (compared by
   *  timing_check_finish(candidate, sample) where they are). */
  void timing_check_candidate(std::size_t sample);
  /** As timing_check_candidate, by replaying the candidate's CUDA graph of `set` (the timing
   *  engine's device figure replayed it) on the rewrite for `sample`. */
  void timing_check_candidate_graph(std::size_t set, std::size_t sample);
  /** The reference's CUDA graph replayed on the rewrite for `sample` that its forward had in
   *  timing_check_begin (its device figure replayed the graphs); timing_check_finish(
   *  reference_graph) compares the two. */
  void timing_check_reference_graph(std::size_t sample);
  /** The reference's forward twice more on the rewrite for `sample`, each from the check's
   *  generator state, after the candidate's outputs of that sample did not match its forward's:
   *  timing_check_finish(reference_again) compares the two runs. */
  void timing_check_reference_again(std::size_t sample);
  /** Whose outputs timing_check_finish compares with the reference's forward. */
  enum class check_source { native, candidate, reference_graph, reference_again };
  /** The reference's forward on the rewrite for `sample` (timing_check_begin's) against
   *  `source`'s outputs, both on the host. */
  trial_outputs timing_check_finish(check_source source, std::size_t sample);

  /** What a Python candidate's code changed of torch's global state (settings, namespace
   *  bindings) since the last call; kjudge keeps each change to the candidate's own calls.
   *  `after_timing`: the timed samples are over; a change made during them, which the
   *  reference's samples may have run under, throws kj::error(candidate), as does a change to
   *  what the reference runs with. Empty for a native candidate. */
  [[nodiscard]] std::vector<state_change> candidate_changes(bool after_timing);
  /** Starts booking the CPU time of every Python thread but the worker's own (Linux /proc) to
   *  the side whose turn it is (the side whose inputs were refreshed last). */
  void thread_turns_begin();
  /** What was booked since thread_turns_begin; the booking stops. */
  [[nodiscard]] thread_turns thread_turns_end();
  /** Before the timing loop: waits, at most `max_s`, while the Python threads but the worker's
   *  own and the processes the worker started use more than one clock tick of CPU in a window
   *  of `window_s` (returns at once where there are none). */
  [[nodiscard]] background_wait background_quiet(double max_s, double window_s);
  /** Starts keeping the outputs of some of a Python candidate's calls in the timing loop, drawn
   *  by the timing key; their copies are held here, out of Python's reach. audit_end() keeps
   *  a counted call not yet drawn for (each is, right after its clock stops: after_run), stops,
   *  and says how many were kept. */
  void audit_begin();
  [[nodiscard]] std::size_t audit_end();
  /** Kept audit i (< audit_end()) made ready for timing_check_finish(candidate, its number):
   *  that number, and "" or why the call's outputs could not be read. */
  [[nodiscard]] std::pair<std::size_t, std::string> timing_audit_begin(std::size_t i);
  /** Native timing, set i: its inputs (contiguous), its copies of the reference's parameters and
   *  buffers, and its reference-shaped outputs (the last two shared by every set unless
   *  timing_inputs_info::native_buffers_per_set). */
  [[nodiscard]] std::vector<tensor_view> timing_native_inputs(std::size_t set);
  [[nodiscard]] std::vector<tensor_view> timing_native_params(std::size_t set);
  [[nodiscard]] std::vector<tensor_view> timing_native_outputs(std::size_t set);

  /** The interpreter state; defined in bridge.cpp only (public so prewarm() can hold one). */
  struct impl;

 private:
  std::unique_ptr<impl> m_impl;
};

}  // namespace kj::python
