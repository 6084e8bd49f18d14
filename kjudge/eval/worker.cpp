// The evaluation pipeline, run inside the worker process: load, build, correctness trials,
// timing. Every fact is sent as an event as soon as it is known (protocol.hpp), so a crash later
// in the pipeline loses nothing already measured.

#include <kjudge/eval/worker.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <future>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvtx3/nvToolsExt.h>

#include <kjudge/check/compare.hpp>
#include <kjudge/compile/nvcc.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/result.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/cuda/check.hpp>
#include <kjudge/cuda/device_buffer.hpp>
#include <kjudge/cuda/nvml.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/device/specs.hpp>
#include <kjudge/eval/forward_record.hpp>
#include <kjudge/eval/stress_size.hpp>
#include <kjudge/eval/timing_checks.hpp>
#include <kjudge/native/candidate_library.hpp>
#include <kjudge/profile/forward_json.hpp>
#include <kjudge/profile/gpu_work_watch.hpp>
#include <kjudge/profile/invariants.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/python/bridge.hpp>
#include <kjudge/runner/fence.hpp>
#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/gpu_neighbours.hpp>
#include <kjudge/runner/process.hpp>

namespace kj::eval {

namespace {

/** Host tensor view for the comparison code. */
check::host_tensor to_host(const python::tensor_view& v) {
  return check::host_tensor{v.type, v.shape, v.data, v.reached};
}

output_check to_output_check(int index, const check::output_comparison& c) {
  output_check o;
  o.index = index;
  o.passed = c.passed;
  o.expected_shape = c.expected_shape;
  o.actual_shape = c.actual_shape;
  o.expected_dtype = std::string(to_string(c.expected_dtype));
  o.actual_dtype = std::string(to_string(c.actual_dtype));
  o.atol = c.tol.atol;
  o.rtol = c.tol.rtol;
  o.numel = c.numel;
  o.nan_count = c.nan_count;
  o.inf_count = c.inf_count;
  o.mismatch_count = c.mismatch_count;
  o.max_abs_err = c.max_abs_err;
  o.mean_abs_err = c.mean_abs_err;
  o.max_rel_err = c.max_rel_err;
  o.mean_rel_err = c.mean_rel_err;
  o.abs_err_count = c.abs_err_count;
  o.rel_err_count = c.rel_err_count;
  o.worst_index = c.worst_index;
  for (const auto& m : c.mismatches)
    o.mismatches.push_back({m.index, m.expected, m.actual, m.abs_err,
                            m.expected_text.empty() ? value_text(m.expected) : m.expected_text,
                            m.actual_text.empty() ? value_text(m.actual) : m.actual_text});
  o.constant_output = c.constant_output;
  o.actual_hash = c.actual_hash;
  o.reference_varies = c.reference_varies;
  o.reference_sum = c.reference_sum;
  o.reference_abs_sum = c.reference_abs_sum;
  o.message = c.message;
  return o;
}

/** Calls f (if any) when it goes out of scope: after run_worker's last event, before the
 *  pipeline (Python, CUDA buffers) is destroyed. */
struct finally_call {
  const std::function<void()>& f;
  ~finally_call() {
    if (f) f();
  }
};

/** The last line that is not blank, without its surrounding blanks. */
std::string last_line(const std::string& s) {
  const std::size_t end = s.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  const std::size_t newline = s.rfind('\n', end);
  const std::size_t begin =
      s.find_first_not_of(" \t", newline == std::string::npos ? 0 : newline + 1);
  return s.substr(begin, end + 1 - begin);
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

/** The error's own line: where `s` holds a Python traceback, the line that names the last
 *  exception ("NotImplementedError: Could not run 'aten::equal' ..."), which comes after the
 *  last frame's lines ("  File ...", its source and markers, all indented); else the last line.
 *  A message of several lines ends elsewhere: torch's list of dispatch keys made the summary
 *  "PythonDispatcher: registered at .../PythonFallbackKernel.cpp:196 [backend fallback]". */
std::string error_line(const std::string& s) {
  const std::size_t frame = s.rfind("\n  File \"");
  if (frame == std::string::npos) return last_line(s);
  auto line_at = [&s](std::size_t begin) {
    const std::size_t end = s.find('\n', begin);
    std::string line = s.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    return line;
  };
  for (std::size_t at = s.find('\n', frame + 1); at != std::string::npos;
       at = s.find('\n', at + 1)) {
    const std::size_t begin = at + 1;
    if (begin >= s.size() || s[begin] == ' ' || s[begin] == '\t' || s[begin] == '\n') continue;
    std::string line = line_at(begin);
    // torch's load_inline: "RuntimeError: Error building extension 'x': [1/3] c++ -MMD ..."
    // (ninja's output follows): the extension's name, then the compiler's first error.
    constexpr std::string_view building = "Error building extension '";
    const std::size_t named = line.find(building);
    const std::size_t quote =
        named == std::string::npos ? named : line.find('\'', named + building.size());
    if (quote == std::string::npos) return line;
    line.resize(quote + 1);
    for (std::size_t next = s.find('\n', begin); next != std::string::npos;
         next = s.find('\n', next + 1)) {
      const std::string diagnostic = line_at(next + 1);
      if (diagnostic.find("error:") != std::string::npos ||
          diagnostic.find("error #") != std::string::npos)
        return line + ": " + diagnostic.substr(diagnostic.find_first_not_of(" \t"));
    }
    return line;
  }
  return last_line(s);
}

/** An error's message in one line that says what happened: its first line, and where that ends
 *  in ':' ("ModelNew.forward raised:"), the error's own last line after it ("RuntimeError: CUDA
 *  out of memory ..."). */
std::string headline(const std::string& message) {
  const std::string head = first_line(message), tail = error_line(message);
  if (!head.ends_with(':') || tail.empty() || tail == head) return head;
  return head + " " + tail;
}

/** An error's message whose first line (the result's summary) is its headline; the whole
 *  message follows, unchanged. */
std::string summarised(const std::string& message) {
  const std::string head = first_line(message), line = headline(message);
  return line == head ? message : line + message.substr(head.size());
}

/** "nominal trial 2", "the held-out trial", "stress trial 1" (indices from 0). */
std::string trial_name(const std::string& kind, int index) {
  if (kind == "held_out") return "the held-out trial";
  return fmt::format("{} trial {}", kind, index + 1);
}

class pipeline {
 public:
  pipeline(const job& j, event_writer& events) : m_job(j), m_events(events) {}

  /** Stops the imports' watch, then lets go of the GPU's lock and any mark of working without it:
   *  on every way out, before the worker's teardown (which ends the process without destroying
   *  this). */
  void release_gpu() noexcept {
    try {
      // No import's GPU work takes the lock after this (waits for a handler that is waiting).
      if (m_watch) m_watch->stop();
    } catch (...) {  // NOLINT(bugprone-empty-catch): the lock goes in any case
    }
    release_lock();
  }

  /** Lets go of the GPU's lock and any mark of working without it, and of the CPU's lock. */
  void release_lock() noexcept {
    m_gpu_turn.release();
    m_outside.release();
    m_cpu_turn.release();
  }

  /** Whether candidate code has run on the device yet: a CUDA error before then is the
   *  environment's (no usable GPU), after it most likely a sticky error the candidate left. */
  [[nodiscard]] bool candidate_ran() const noexcept { return m_candidate_ran; }

  void run() {
    const bool gpu = m_job.device == "cuda";
    if (gpu) {
      // The device query (the driver's initialisation, 0.1-0.2 s) and the primary context run in
      // threads while Python starts; torch then only retains the context.
      m_events.phase("cuda_init_started");
      m_device_query = std::async(std::launch::async, [] { return cuda::query_device(0); }).share();
      m_context = std::async(std::launch::async, [] { cuda::create_primary_context(0); });
    }
    // nvcc runs in the background while the interpreter starts and torch imports: the two are the
    // largest fixed costs of an evaluation and do not depend on each other. It needs the device's
    // architecture, so it starts once the query has it.
    if (m_job.kind == candidate_kind::native && m_job.reference_alone_until.empty()) {
      m_events.phase("compile_native_started");
      // The request (the environment, the working folder, which nvcc) is taken here, before the
      // build's thread starts: Python, on this thread, may change the environment (torch sets
      // CUDA_MODULE_LOADING) while the build runs, and no thread may read it meanwhile.
      m_build = std::async(
          std::launch::async, [request = native_request(), query = m_device_query]() mutable {
            request.arch =
                native_arch(query.valid() ? std::optional(query.get().arch()) : std::nullopt);
            return compile::build_native(request);
          });
    }
    // The session reports its steps as phases: start_python, import_torch, torch_device_setup.
    python::session_options so;
    so.python_executable = m_job.python;
    so.device = m_job.device;
    so.on_step = [this](std::string_view step) { m_events.phase(step); };
    try {
      m_session.emplace(so);
    } catch (...) {
      // Without a usable GPU torch's device setup fails as well; the device query says why in
      // CUDA's words (the GPU is not usable), so its error is the one reported.
      if (m_device_query.valid()) static_cast<void>(m_device_query.get());
      throw;
    }
    if (m_context.valid()) {
      // Usually over by now (torch_device_setup needs the same primary context); a phase of its
      // own either way, so that time spent waiting here shows. A device that could not be queried
      // fails here at the latest, before the candidate is built or run.
      m_events.phase("wait_cuda_context");
      m_device = m_device_query.get();
      m_context.get();
    }
    const auto& env = m_session->environment();
    nlohmann::json prov = {{"torch_version", env.torch_version},
                           {"torch_cuda_version", env.torch_cuda_version},
                           {"python_version", env.python_version},
                           {"python_executable", env.python_executable}};
    if (gpu) {
      gpu_info g;
      g.name = m_device->name;
      g.uuid = m_device->uuid;
      g.pci_bus_id = m_device->pci_bus_id;
      g.compute_capability = fmt::format("{}.{}", m_device->cc_major, m_device->cc_minor);
      g.sm_count = m_device->sm_count;
      g.memory_bytes = m_device->total_memory_bytes;
      g.l2_bytes = m_device->l2_bytes;
      g.sm_clock_max_mhz = m_device->sm_clock_khz / 1000;
      g.memory_clock_mhz = m_device->memory_clock_khz / 1000;
      g.driver_version = device::cuda_version_string(m_device->driver_version);
      if (const cuda::nvml* lib = cuda::nvml::instance(); lib != nullptr)
        g.driver_release = lib->driver_release();
      g.runtime_version = device::cuda_version_string(m_device->runtime_version);
      prov["gpu"] = g;
    }
    m_events.send({{"provenance", prov}});

    // The imports may build for minutes (load_inline, Triton) and take no lock for that; the
    // first GPU work one does takes the GPU's lock before it runs (watch_imports).
    if (gpu) watch_imports();
    m_events.phase("load_problem");
    m_session->load_problem(m_job.problem, m_job.problem_sha256);
    if (gpu) after_problem_import();
    if (!m_job.reference_alone_until.empty()) {
      run_reference_alone();
      return;
    }

    if (!load_candidate()) return;  // it stops the watch
    // From the first model on, everything this worker does runs on the GPU: held until its
    // timing ends (or the worker does), if an import's GPU work did not take it already. A
    // native library is loaded under it too: its constructors may already launch work there.
    if (gpu) take_gpu_turn();
    if (m_native_library) {
      m_events.phase("load_native");
      m_candidate_ran = true;  // its constructors are candidate code
      load_native_library();
      m_native_file.reset();
    }

    m_events.phase("build_models reference");
    m_session->build_reference(m_job.base_seed);
    m_events.phase("build_models candidate");
    const auto copy = m_session->build_candidate(m_job.base_seed);
    m_weight_copy = copy.method;
    m_events.send({{"weight_copy", copy.method}});
    if (copy.method == "seed_only" || copy.method == "partial") {
      const std::string names = listed(copy.unpaired, 8, ", ");
      // What the steps by order and shape cannot pair (docs/methodology.md, Weights).
      constexpr std::string_view unpairable =
          "a shape has more tensors on one side, or a tensor's shape is none of the other "
          "side's: a weight stored transposed with values of the candidate's own, a lazy "
          "layer under another name";
      m_events.flag(
          "weights_not_copied", "warning",
          copy.method == "partial"
              ? fmt::format("some of the reference's parameters ({}) found no tensor of the "
                            "candidate's by name or by value, and the candidate's remaining "
                            "tensors could not all be paired with them by order and shape ({}); "
                            "the candidate's kept the values the seed gave them, and the pairs "
                            "found by name (or its end) or by value were copied",
                            names, unpairable)
              : fmt::format("the reference's parameters ({}) found no tensor of the candidate's "
                            "by name or by value, and the candidate's could not all be paired "
                            "with them by order and shape ({}); nothing was copied: both models "
                            "were only built under the same seed",
                            names, unpairable));
    }

    resolve_tolerance();
    if (!run_trials()) return;
    if (m_job.profile_ranges) {
      run_profile_ranges();
    } else if (m_job.timing) {
      run_timing();
    } else {
      if (gpu) settle_gpu_turn("");
      check_nominal_sizes();
    }
    release_gpu();                  // the rest is the report and teardown
    note_candidate_changes(false);  // the timing check's
    if (!m_timing_failed.empty()) {
      m_events.final(eval_status::incorrect, m_timing_failed);
      return;
    }
    m_events.final(eval_status::correct, "");
  }

 private:
  /** job::reference_alone_until: the reference, no candidate loaded, through the trials in the
   *  order run_trials() runs them, each up to its reference's part (trial_begin runs it where
   *  there is no Python candidate), until that phase. Correct where it got there. With
   *  k_reference_alone_all, the problem's tolerance read, the nominal and held-out trials, for
   *  a Python job each one's inputs drawn again after the reference's run (a Python
   *  candidate's trial draws them twice, and fails the problem where they differ), then two of
   *  the input sets that timing, the nominal-size check and a profile set up (the reference on
   *  the nominal sizes among them), and the reference's timing runner once on each (on
   *  rescaled values): the problem's own errors from those steps (docs/methodology.md says
   *  which) end this run too. The stress trials are left out: their problem errors skip them,
   *  and never end an evaluation. */
  void run_reference_alone() {
    if (m_job.device == "cuda") {
      stop_watch();  // no candidate's import to watch
      take_gpu_turn();
    }
    m_events.phase("build_models reference");
    m_session->build_reference(m_job.base_seed);
    const bool all = m_job.reference_alone_until == k_reference_alone_all;
    if (all) static_cast<void>(m_session->tolerance());  // the problem's, checked there
    struct planned {
      const char* kind;
      int index;
      std::uint64_t seed;
      std::int64_t scale;
    };
    std::vector<planned> order;
    for (int i = 0; i < m_job.trials; ++i)
      order.push_back({"nominal", i, trial_seed(m_job.base_seed, i), 1});
    order.push_back({"held_out", 0, m_job.held_out_seed, 1});
    // (A stress trial's problem error is a skipped trial, never the verdict.)
    if (m_job.stress && !all)
      for (int i = 0; i < stress_trials; ++i)
        order.push_back({"stress", i, trial_seed(m_job.base_seed + 1, i), m_job.stress_scale});
    for (const auto& t : order) {
      const std::string phase = trial_reference_phase(t.kind, t.index);
      m_events.phase(phase);
      static_cast<void>(m_session->trial_begin(t.seed, t.scale));
      // A Python candidate's trial draws its inputs twice (the problem fails where the draws
      // differ): so does this run, in every trial of k_reference_alone_all and in the stress
      // trial whose skip it checks (the orchestrator's check_stress_skip).
      const bool checked_stress =
          phase == m_job.reference_alone_until && std::string_view(t.kind) == "stress";
      if ((all || checked_stress) && m_job.kind == candidate_kind::python)
        m_session->trial_inputs_again(t.seed, t.scale);
      if (phase == m_job.reference_alone_until) break;
    }
    if (all) {
      m_events.phase("timing_setup");
      const auto ti =
          m_session->timing_setup(2, m_job.base_seed ^ 0x5eed, m_job.timing_key, 1ull << 30, false);
      // The reference's runner as timing calls it: each set once on values rescaled for the
      // sample (a forward that needs the values get_inputs() drew fails there).
      m_events.phase("timing reference");
      const auto reference = m_session->make_target(python::side::reference);
      for (std::size_t i = 0; i < ti.sets; ++i) {
        reference->prepare(i);
        reference->run();
      }
      if (m_job.device == "cuda") m_session->synchronize_candidate();  // its errors said here
    }
    release_gpu();
    m_events.final(eval_status::correct, "");
  }

  /** Loads or builds the candidate. False when the evaluation ended (compile error). */
  bool load_candidate() {
    build_info b;
    b.attempted = true;
    if (m_job.kind == candidate_kind::python) {
      m_events.phase("load_candidate");
      m_import_step = import_step::candidate;
      m_candidate_ran = true;  // its import is candidate code, which may use the device
      b.tool = "python-import";
      const auto import_start = std::chrono::steady_clock::now();
      try {
        b.build_s = m_session->load_candidate(m_job.candidate);
        stop_watch();
        // A wait for the GPU's lock at the import's first GPU work is no part of its build.
        if (m_import_lock_wait_s > 0) b.build_s = std::max(0.0, b.build_s - m_import_lock_wait_s);
        b.ok = true;
      } catch (const kj::error& e) {
        if (e.kind() != error_kind::candidate) throw;
        stop_watch();  // its flags before the final event
        // A failed import took its time too (a load_inline build that failed after 20 s).
        b.build_s = std::max(
            0.0,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - import_start).count() -
                m_import_lock_wait_s);
        b.log = e.message();
        m_events.send({{"build", b}});
        // The headline and the error's own last line ("SyntaxError: invalid syntax").
        const std::string head = first_line(e.message()), tail = error_line(e.message());
        m_events.final(eval_status::compile_error,
                       tail.empty() || tail == head ? head : head + " " + tail);
        return false;
      }
      m_events.send({{"build", b}});
      return true;
    }
    m_events.phase("compile_native");
    const auto r = m_build.get();
    b.tool = "nvcc";
    b.ok = r.ok;
    b.cached = r.cached;
    b.build_s = r.build_time.count();
    b.cache_key = r.key;
    b.compiler_version = r.nvcc_version;
    for (const auto& a : r.command) b.command += (b.command.empty() ? "" : " ") + a;
    b.log = r.log;  // on success: nvcc's warnings, and why a build was not cached
    b.not_cached = r.not_cached;
    if (!r.ok) {
      m_events.send({{"build", b}});
      // Only nvcc's verdict on the source is a compile error; a missing or killed compiler, the
      // time limit or an unwritable cache is kjudge's side.
      m_events.final(r.failure == compile::build_failure::rejected ? eval_status::compile_error
                                                                   : eval_status::internal_error,
                     r.error.empty() ? "nvcc failed" : r.error);
      return false;
    }
    m_events.send({{"build", b}});
    if (m_device) {
      // A runtime newer than the driver fails the first launch as cudaErrorInsufficientDriver,
      // which would read as the candidate's error.
      if (std::string why =
              compile::toolkit_newer_than_driver(r.nvcc_version, m_device->driver_version);
          !why.empty()) {
        m_events.final(eval_status::internal_error, why);
        return false;
      }
    }
    m_native_library = r.library;  // loaded once the GPU's lock is held (run())
    // Held open until then: the wait for the GPU takes up to a third of --timeout, and a cache
    // prune (`kjudge cache clear` keeps only builds looked up in the last minute) may remove
    // the library meanwhile (load_native_library).
    m_native_file.emplace(r.library);
    return true;
  }

  /** Loads the library build_native gave; where that fails because a cache prune removed or
   *  replaced it since the build, the file this worker held open from then on
   *  (/proc/self/fd/N): the same bytes. */
  void load_native_library() {
    try {
      m_library.emplace(*m_native_library);
    } catch (const kj::error&) {
      if (!m_native_file || m_native_file->fd < 0) throw;
      struct stat held = {};
      struct stat now = {};
      const bool moved = ::fstat(m_native_file->fd, &held) == 0 &&
                         (::stat(m_native_library->c_str(), &now) != 0 ||
                          held.st_ino != now.st_ino || held.st_dev != now.st_dev);
      if (!moved) throw;
      m_library.emplace(fmt::format("/proc/self/fd/{}", m_native_file->fd));
    }
  }

  /** A file held open for reading for the object's life. */
  struct open_file {
    int fd = -1;
    explicit open_file(const std::filesystem::path& p)
        : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
    open_file(const open_file&) = delete;
    open_file& operator=(const open_file&) = delete;
    ~open_file() {
      if (fd >= 0) ::close(fd);
    }
  };

  /** The architecture to build for from the device's ("90"; none without a GPU). */
  static std::string native_arch(const std::optional<std::string>& arch) {
    return compile::target_arch(arch.value_or("90"));
  }

  /** The build request but its architecture, with this process's environment and folder now. */
  compile::nvcc_request native_request() const {
    compile::nvcc_request req;
    req.source = m_job.candidate;
    req.nvcc = compile::find_nvcc();
    req.environment = runner::environment_snapshot();
    std::error_code ec;
    req.working_dir = std::filesystem::current_path(ec);
    req.extra_flags = m_job.nvcc_flags;
    req.cache_dir = m_job.cache_dir / "native";
    req.include_dir = m_job.include_dir;
    // The build may take what --timeout leaves (the evaluation's own limit ends it in any case).
    if (m_job.timeout_s > 0)
      req.timeout = std::chrono::milliseconds(static_cast<long long>(m_job.timeout_s * 1e3));
    return req;
  }

  /** The floating-point outputs' tolerance: the dtype's default, the problem's KJUDGE_ATOL /
   *  KJUDGE_RTOL, the command line's --atol / --rtol, later ones winning, each of atol and rtol
   *  on its own; the source says where each came from when they differ. */
  void resolve_tolerance() {
    const auto pt = m_session->tolerance();
    std::string atol_source = "dtype-default", rtol_source = "dtype-default";
    if (pt.has_atol) m_atol = pt.atol, atol_source = "problem";
    if (pt.has_rtol) m_rtol = pt.rtol, rtol_source = "problem";
    if (m_job.atol) m_atol = *m_job.atol, atol_source = "command line";
    if (m_job.rtol) m_rtol = *m_job.rtol, rtol_source = "command line";
    m_events.send(
        {{"tolerance_source", atol_source == rtol_source
                                  ? atol_source
                                  : fmt::format("atol: {}, rtol: {}", atol_source, rtol_source)}});
  }

  /** Integer and bool outputs compare exactly: no override loosens them. */
  check::tolerance tolerance_for(dtype t) const {
    auto tol = check::default_tolerance(t);
    if (!is_floating(t)) return tol;
    if (m_atol) tol.atol = *m_atol;
    if (m_rtol) tol.rtol = *m_rtol;
    return tol;
  }

  /** Runs the candidate on the trial's inputs (Python or native). Returns the host wall time of
   *  a native call plus its synchronisation in ms (Python candidates are timed by the harness). */
  double run_candidate_on_trial() {
    m_candidate_ran = true;
    if (m_job.kind == candidate_kind::python) {
      m_session->trial_run_candidate();
      return 0;
    }
    const auto inputs = m_session->trial_native_inputs();
    const auto outputs = m_session->trial_native_outputs();
    const auto params = m_session->parameters();
    native::call_record rec(inputs, params, outputs, m_session->stream());
    ensure_workspace(rec.shape_only());
    // Garbage in the workspace at every trial: a candidate must not rely on zeroed scratch.
    m_workspace->fill(0xFF, static_cast<cudaStream_t>(m_session->stream()));
    rec.set_workspace(m_workspace->data(), m_workspace->size());
    m_session->synchronize_candidate();
    const auto start = std::chrono::steady_clock::now();
    m_library->forward(rec.call());
    m_session->synchronize_candidate();
    return milliseconds(std::chrono::steady_clock::now() - start).count();
  }

  void ensure_workspace(const kj_call& shape_only) {
    const auto bytes = std::max<std::uint64_t>(m_library->workspace_bytes(shape_only), 256);
    if (!m_workspace || m_workspace->size() < bytes) {
      m_workspace.reset();
      try {
        m_workspace.emplace(static_cast<std::size_t>(bytes));
      } catch (const kj::error& e) {
        // Named for what asked: a bare "cudaMalloc: out of memory" did not say.
        KJ_THROW(error_kind::candidate,
                 "the workspace kj_workspace_bytes asked for ({} bytes) "
                 "could not be allocated: {}",
                 bytes, e.message());
      }
    }
  }

  /** The failed check of a candidate output whose dtype kjudge does not compare. */
  output_check unsupported_output(int index, const python::tensor_view& ref,
                                  const python::tensor_view& cand) const {
    output_check o;
    o.index = index;
    o.expected_shape = ref.shape;
    o.actual_shape = cand.shape;
    o.expected_dtype = std::string(to_string(ref.type));
    o.actual_dtype = cand.unsupported_dtype;
    const auto tol = tolerance_for(ref.type);
    o.atol = tol.atol;
    o.rtol = tol.rtol;
    o.numel = ref.numel();
    o.message =
        check::layout_mismatch(o.expected_shape, o.actual_shape, o.expected_dtype, o.actual_dtype);
    return o;
  }

  /** Where an output's dtypes differ and a side returned a number: which, and what kjudge made
   *  of it ("expected float64, got float32" alone reads as if the reference returned a float64
   *  tensor). Empty otherwise. */
  static std::string number_note(const python::tensor_view& ref, const python::tensor_view& cand,
                                 std::string_view other) {
    std::vector<std::string> notes;
    if (!ref.python_number.empty())
      notes.push_back(fmt::format("the reference returned {}, compared as {}", ref.python_number,
                                  to_string(ref.type)));
    if (!cand.python_number.empty())
      notes.push_back(fmt::format("{} returned {}, compared as {}", other, cand.python_number,
                                  to_string(cand.type)));
    return notes.empty() ? std::string() : fmt::format(" ({})", fmt::join(notes, "; "));
  }

  /** Compares every output pair; returns whether all passed. `error` says why when the counts
   *  differ, naming the compared side `other` (what gave out.candidate). */
  bool compare_outputs(const python::trial_outputs& out, std::vector<output_check>& checks,
                       std::string& error, std::string_view other = "the candidate") const {
    bool passed = true;
    if (out.reference.size() != out.candidate.size()) {
      passed = false;
      error = fmt::format("{} returned {} output(s), the reference {}", other, out.candidate.size(),
                          out.reference.size());
    }
    const auto n = std::min(out.reference.size(), out.candidate.size());
    for (std::size_t i = 0; i < n; ++i) {
      const auto& ref = out.reference[i];
      if (!out.candidate[i].unsupported_dtype.empty()) {
        checks.push_back(unsupported_output(static_cast<int>(i), ref, out.candidate[i]));
        checks.back().message += number_note(ref, out.candidate[i], other);
        passed = false;
        continue;
      }
      const auto c =
          check::compare(to_host(ref), to_host(out.candidate[i]), tolerance_for(ref.type));
      auto o = to_output_check(static_cast<int>(i), c);
      if (!c.dtype_ok) o.message += number_note(ref, out.candidate[i], other);
      o.expected_hash = check::value_hash(to_host(ref));
      // Is the reference itself constant? Then a constant candidate output is no evidence.
      o.reference_constant = check::is_constant(to_host(ref));
      passed = passed && o.passed;
      checks.push_back(std::move(o));
    }
    return passed;
  }

  /** After a Python candidate raised on a trial before the reference ran (or returned outputs
   *  kjudge cannot judge): the reference on the same inputs (drawn again). Its error where it
   *  fails too, or returns such outputs itself (the problem's: it cannot run its own trial),
   *  else empty. */
  std::string reference_fails_too(const std::string& kind, int index, std::uint64_t seed,
                                  std::int64_t scale) {
    m_events.phase(trial_reference_phase(kind, index));
    try {
      m_session->trial_run_reference(seed, scale);
    } catch (const kj::error& e) {
      // Only the reference's own forward failing on inputs drawn as before counts, and not by
      // the state the candidate's code can leave in the process: a sticky CUDA error (an
      // illegal address, a device-side assert) or memory it took or limited. Those fail the
      // draw or the forward as well, and stay the candidate's.
      static constexpr std::string_view left_by_candidate[] = {
          "CUDA error",     "cudaError",         "AcceleratorError",      "device-side assert",
          "illegal memory", "out of memory",     "can't allocate memory", "CUBLAS_STATUS",
          "CUDNN_STATUS",   "misaligned address"};
      const std::string& m = e.message();
      if (e.kind() != error_kind::problem ||
          !(m.starts_with("the reference Model failed on trial inputs") ||
            m.starts_with("Model.forward returned")))
        return {};
      for (const auto marker : left_by_candidate)
        if (m.find(marker) != std::string::npos) return {};
      return m;
    }
    return {};
  }

  /** A trial's calls, each phase said: its inputs (a native candidate's reference runs there;
   *  t takes their shapes and jitter), the candidate, a Python candidate's reference after it,
   *  and the outputs copied to the host. `reference_ran` says how far it got where it throws;
   *  `native_ms`, a native candidate's call. */
  python::trial_outputs trial_calls(trial_result& t, bool& reference_ran, double& native_ms) {
    const auto phase = [&](const char* step) {
      m_events.phase(fmt::format("trial {} {} {}", t.kind, t.index, step));
    };
    phase("reference");
    const auto info = m_session->trial_begin(t.seed, t.shape_scale);
    t.jitter = info.jitter;
    if (t.kind == "stress")
      for (const auto& [nominal, drawn] : info.jitter)
        if (std::to_string(drawn) != nominal) m_stress_scaled = true;
    t.input_shapes = info.shapes;
    t.input_dtypes = info.dtypes;
    // From the first nominal trial, whose seed follows from --seed: the held-out trial's
    // secret one made the decision differ from run to run near the limit.
    if (t.kind == "nominal" && t.index == 0)
      m_stress_bytes = stress_input_bytes(info.shapes, info.dtypes, info.jitter, info.pinned,
                                          m_job.stress_scale);
    phase("candidate");
    native_ms = run_candidate_on_trial();
    if (!reference_ran) {  // after the candidate: see trial_begin
      phase("reference");
      m_session->trial_run_reference(t.seed, t.shape_scale);
      reference_ran = true;
    }
    phase("compare");
    return m_session->trial_finish();
  }

  /** One trial; returns whether it passed. Throws on candidate errors, and on the problem's
   *  (its inputs, or a reference that fails on them: a stress trial's is then sent skipped). */
  bool run_trial(const std::string& kind, int index, std::uint64_t seed, std::int64_t scale) {
    trial_result t;
    t.kind = kind;
    t.index = index;
    t.seed = seed;
    t.shape_scale = scale;
    double native_ms = 0;
    python::trial_outputs out;
    // A native candidate's reference runs in trial_begin, a Python candidate's after it.
    bool reference_ran = m_job.kind == candidate_kind::native;
    try {
      out = trial_calls(t, reference_ran, native_ms);
    } catch (const kj::error& e) {
      // The trial is reported whatever ended it, with the reason.
      t.error = summarised(e.message());
      // A candidate that raised where the reference cannot run either (a problem whose sizes
      // do not jitter together, or cannot all grow x4 in a stress trial) is not blamed for it.
      std::string problem = e.kind() == error_kind::problem ? e.message() : std::string();
      if (e.kind() == error_kind::candidate && !reference_ran) {
        if (const auto why = reference_fails_too(kind, index, seed, scale); !why.empty()) {
          // An output the harness does not judge at all (a dict, an object; a container holding
          // one, as its messages name them) is no failure of the reference's forward: said as
          // what the problem returns.
          const bool unjudged = why.starts_with("Model.forward returned") &&
                                (why.find(", not a tensor, a tuple/list of tensors, or a number") !=
                                     std::string::npos ||
                                 why.find(", not a tensor or number") != std::string::npos);
          const std::string lead =
              unjudged
                  ? "the problem's own outputs cannot be judged (kjudge compares a tensor, a flat "
                    "tuple or list of tensors and numbers, or a number)"
                  : fmt::format(
                        "the reference fails on the inputs of {} too, so the problem "
                        "cannot run its own trial",
                        trial_name(kind, index));
          problem = fmt::format("{}: {}\n(the candidate's error on them: {})", lead,
                                summarised(why), first_line(e.message()));
          t.error = problem;
        }
      }
      t.skipped = kind == "stress" && !problem.empty();
      m_events.send({{"trial", t}});
      if (!problem.empty() && e.kind() != error_kind::problem)
        KJ_THROW(error_kind::problem, "{}", problem);
      throw;
    }
    t.inputs_modified = out.inputs_modified;
    t.reference_inputs_modified = out.reference_inputs_modified;
    t.reference_ms = out.reference_ms;
    t.candidate_ms = m_job.kind == candidate_kind::native ? native_ms : out.candidate_ms;
    t.passed = compare_outputs(out, t.outputs, t.error);
    if (!t.passed && kind == "nominal" && index == 0 && !m_own_weights_tried) {
      m_own_weights_tried = true;
      if (own_weights_pass(seed, scale)) {
        // The trial once more with them, reported; only where it passes too are they kept (a
        // candidate whose outputs change from call to call gets no second chance).
        if (run_trial(kind, index, seed, scale)) {
          static_cast<void>(m_session->use_weights(python::session::weights::kept));
          m_events.send({{"weight_copy_undone", m_weight_copy}});
          m_events.flag("weights_copy_undone", "info",
                        fmt::format("with the reference's weights copied in ({}) the first "
                                    "nominal trial failed, and with the candidate's own, as the "
                                    "seed built both models (KernelBench's rule), it passed: its "
                                    "parameters are not the reference's (a constant folded into "
                                    "them, say), and its own were kept for the whole evaluation",
                                    m_weight_copy));
          return true;
        }
        static_cast<void>(m_session->use_weights(python::session::weights::copied));
        return false;
      }
    }
    if (kind != "stress")
      for (const auto& o : t.outputs)
        if (o.shape_ok()) m_values_compared += o.abs_err_count;
    note_output_flags(t, out.inputs_modified_as_reference);
    m_events.send({{"trial", t}});
    if (!t.passed && !m_reference_rerun) {
      m_reference_rerun = true;
      check_reference_repeats(kind, index, seed, scale);
    }
    return t.passed;
  }

  /** `again()`: why the reference's outputs, run once more on inputs it already ran on, differ
   *  from its first run's; "" where they agree. A reference that fails outright on them now may
   *  fail on what the candidate's code left in the process (memory it holds, a sticky CUDA
   *  error, which torch raises as a plain RuntimeError): no evidence either way, "" too. What
   *  the candidate's code did (popcorn_pri touched) is its error, as anywhere, and kjudge's own
   *  failures are not swallowed. */
  template <class Again>
  static std::string reference_differs(Again&& again) {
    try {
      return again();
    } catch (const kj::error& e) {
      if (e.kind() == error_kind::candidate || e.kind() == error_kind::internal ||
          e.kind() == error_kind::protocol)
        throw;
      return "";
    }
  }

  /** Flags a reference whose outputs, run `how` on the inputs of `where`, differed (`what`): the
   *  candidate's `failure` may not be its own. The verdict stands: a candidate's code cannot turn
   *  its own failure into the problem's. */
  void flag_reference_nondeterministic(const std::string& how, const std::string& where,
                                       const std::string& what, const char* failure) {
    m_events.flag(
        "reference_nondeterministic", "error",
        fmt::format("the reference gave different outputs when run {} on the inputs of {} ({}): "
                    "its outputs are not a function of its inputs (a random draw its forward "
                    "makes that kjudge's seed does not reach, state it keeps between calls, or "
                    "memory it leaves uninitialised), so no candidate can match them reliably, "
                    "and the {} may not be the candidate's",
                    how, where, what, failure));
  }

  /** After the first trial the candidate failed: the reference again on that trial's inputs,
   *  against its first run; flagged where the two differ beyond the tolerance. */
  void check_reference_repeats(const std::string& kind, int index, std::uint64_t seed,
                               std::int64_t scale) {
    m_events.phase(fmt::format("trial {} {} reference again", kind, index));
    const std::string what = reference_differs([&] {
      const python::trial_outputs again = m_session->trial_reference_again(seed, scale);
      std::vector<output_check> checks;
      std::string error;
      if (compare_outputs(again, checks, error, "its second run")) return std::string();
      for (const auto& o : checks)
        if (!o.passed) return fmt::format("output {}: {}", o.index, o.message);
      return error.empty() ? std::string("its outputs differ") : error;
    });
    if (!what.empty())
      flag_reference_nondeterministic("again", trial_name(kind, index), what, "failure");
  }

  /** After the first nominal trial of a Python candidate failed with the reference's weights
   *  copied in: that trial again with the candidate's own weights as the seed built them, where
   *  the copy changed any. Where it passes, they are kept for the rest of the evaluation (the
   *  caller runs the trial once more, reported); otherwise the copied ones are put back. A
   *  candidate that folds a constant into its parameters (relu(x W^T + b) * s as
   *  relu(x (sW)^T + sb), s > 0) computes the reference's function with the weights both models
   *  build under one seed, KernelBench's rule, and failed every trial with the reference's. */
  bool own_weights_pass(std::uint64_t seed, std::int64_t scale) {
    if (m_job.kind != candidate_kind::python) return false;
    bool passed = false;
    try {
      if (!m_session->use_weights(python::session::weights::seed)) return false;
      trial_result probe;  // not reported
      probe.kind = "nominal";
      probe.seed = seed;
      probe.shape_scale = scale;
      bool reference_ran = false;
      double native_ms = 0;
      const auto out = trial_calls(probe, reference_ran, native_ms);
      passed = compare_outputs(out, probe.outputs, probe.error);
    } catch (const kj::error& e) {
      // The first run's failure stands (the problem's error there would have ended it then).
      if (e.kind() != error_kind::candidate && e.kind() != error_kind::problem) throw;
    }
    if (!passed) static_cast<void>(m_session->use_weights(python::session::weights::copied));
    return passed;
  }

  /** After the candidate's outputs of a check sample (the post-timing check's, the nominal-size
   *  check's, an audited timed call's) did not match the reference's: the reference twice more
   *  on the same inputs, as check_reference_repeats does after a failed trial. Where its two
   *  runs differ, flagged, and the clause returned says so in the mismatch's message; ""
   *  otherwise. A stateful reference (a call counter in its output) passed every trial against
   *  an exact copy of itself, then failed the nominal-size check with a message that sent its
   *  user to the candidate's code. */
  std::string reference_repeats_on(std::size_t sample, const std::string& where) {
    m_events.phase(fmt::format("{} reference again", where));
    const std::string what = reference_differs([&] {
      m_session->timing_check_reference_again(sample);
      return differences(python::session::check_source::reference_again, sample);
    });
    if (what.empty()) return "";
    flag_reference_nondeterministic("twice more", where, what, "mismatch");
    return "; the reference's own outputs differ between two runs on these inputs (flag "
           "reference_nondeterministic): the mismatch may not be the candidate's";
  }

  /** Flags what the Python candidate's code changed of torch's global state since the last
   *  call (kept to its own calls); see python::session::candidate_changes for `after_timing`. */
  void note_candidate_changes(bool after_timing) {
    if (m_job.kind != candidate_kind::python) return;
    const auto changes = m_session->candidate_changes(after_timing);
    if (changes.empty()) return;
    std::vector<std::string> texts;
    bool by_torch = true;
    for (const auto& c : changes) {
      by_torch = by_torch && c.by_torch;
      texts.push_back(c.text);
    }
    // Sorted: the harness finds binding changes in a hashed set's order, which differs from
    // process to process (--processes listed one flag twice, its items in two orders).
    std::sort(texts.begin(), texts.end());
    const std::string list = listed(texts, 16, "; ");
    m_events.flag("candidate_changed_torch_state", by_torch ? "info" : "warning",
                  std::string(by_torch ? "torch's own code, run by the candidate's (as "
                                         "torch.compile does), replaced functions of torch"
                                       : "the candidate's code changed global state the "
                                         "reference runs under (torch's, the interpreter's, "
                                         "or a module's the problem uses)") +
                      "; kjudge kept each change to the candidate's own calls, and the reference "
                      "ran without them: " +
                      list);
  }

  /** `as_reference`: of t.inputs_modified, those the reference changed in place too, to the
   *  same values. */
  void note_output_flags(const trial_result& t, const std::vector<int>& as_reference) {
    if (m_seen_outputs.size() < t.outputs.size()) m_seen_outputs.resize(t.outputs.size());
    // Where the reference changes the same inputs in place to the same values (an inplace
    // ReLU), the candidate does what the reference does: info.
    std::string own, shared;
    for (int i : t.inputs_modified) {
      const bool by_reference =
          std::find(as_reference.begin(), as_reference.end(), i) != as_reference.end();
      std::string& which = by_reference ? shared : own;
      which += (which.empty() ? "" : ", ") + std::to_string(i);
    }
    if (!own.empty())
      m_events.flag("input_modified", "warning",
                    "the candidate changed input(s) " + own + " in place");
    if (!shared.empty())
      m_events.flag(
          "input_modified", "info",
          "the candidate changed input(s) " + shared + " in place, as the reference does");
    // On a failed output both flags say why (errors). An output that passed is within tolerance
    // of the reference's however it was made: it raises them (warnings) only where the
    // reference varies beyond rounding (reference_varies), so that it passed by the absolute
    // tolerance alone (a constant 5e-6 for a reference spread over [0, 1e-5] under atol 1e-4), not
    // where the reference varies by rounding (a constant 1 where softmax rows sum to 1).
    const auto passed_note = [](const output_check& o) {
      return fmt::format(
          "; it passed within the tolerance (atol {:g}, rtol {:g}), which is too "
          "loose to tell it from the reference",
          o.atol, o.rtol);
    };
    for (const auto& o : t.outputs) {
      if (o.constant_output && !o.reference_constant && (!o.passed || o.reference_varies))
        m_events.flag(
            "constant_output", o.passed ? "warning" : "error",
            fmt::format("output {} is constant while the reference's is not{}", o.index,
                        o.passed ? fmt::format(" (its values span more than rounding moves "
                                               "them){}",
                                               passed_note(o))
                                 : ""));
      // Identical candidate output for different inputs (different reference outputs; where it
      // passed, a reference that varies beyond rounding, reference_varies, whose sums differ by
      // more than rtol times their magnitudes' sum).
      for (const auto& seen : m_seen_outputs[static_cast<std::size_t>(o.index)]) {
        if (seen.candidate_hash != o.actual_hash || seen.reference_hash == o.expected_hash)
          continue;
        const bool apart = o.reference_varies &&
                           std::abs(seen.reference_sum - o.reference_sum) >
                               o.rtol * std::max(seen.reference_abs_sum, o.reference_abs_sum);
        if (o.passed && !apart) continue;
        m_events.flag("output_repeats", o.passed ? "warning" : "error",
                      fmt::format("output {} is identical for different inputs (a cached or "
                                  "input-independent result){}",
                                  o.index, o.passed ? passed_note(o) : ""));
        break;
      }
      m_seen_outputs[static_cast<std::size_t>(o.index)].push_back(
          {o.expected_hash, o.actual_hash, o.reference_sum, o.reference_abs_sum});
    }
  }

  /** Why the stress trials' inputs would not fit (empty when they would): one copy of them
   *  (estimated from the first nominal trial's, stress_input_bytes) times the copies a trial holds
   *  (the drawn inputs, a pristine copy, each side's), against the host's available memory and,
   *  on a GPU, its free memory. */
  std::string stress_too_large() const {
    constexpr double copies = 5;
    const double need = m_stress_bytes * copies;
    std::optional<double> have = host_available_bytes();
    std::string where = "host";
    if (m_job.device == "cuda") {
      std::size_t free = 0, total = 0;
      if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
        // What torch's allocator holds unused is free to the trials' copies too.
        const double gpu =
            static_cast<double>(free) + static_cast<double>(m_session->cached_free_bytes());
        if (!have || gpu < *have) where = "GPU";
        have = have ? std::min(*have, gpu) : gpu;
      } else {
        (void)cudaGetLastError();
      }
    }
    if (!have || need <= *have) return {};
    return fmt::format(
        "their inputs would take about {:.1f} GiB a copy ({} copies: {:.1f} GiB), more than the "
        "{} memory available ({:.1f} GiB)",
        m_stress_bytes / 1073741824.0, copies, need / 1073741824.0, where, *have / 1073741824.0);
  }

  /** All correctness trials; false when the evaluation ended (incorrect or candidate error). */
  bool run_trials() {
    m_seen_outputs.clear();
    m_values_compared = 0;
    m_reference_rerun = false;
    int passed = 0;
    try {
      for (int i = 0; i < m_job.trials; ++i)
        passed += run_trial("nominal", i, trial_seed(m_job.base_seed, i), 1) ? 1 : 0;
      const bool held_out = run_trial("held_out", 0, m_job.held_out_seed, 1);
      int stress_failed = 0;
      if (m_job.stress) {
        // A problem that cannot run at these sizes (its reference or get_inputs() fails on them,
        // or their inputs do not fit in memory) is not stress-checked: the verdict rests on the
        // nominal and held-out trials, and the trials not run are sent skipped (one that failed
        // was sent so by run_trial).
        std::string skip_why = stress_too_large();
        int run_to = skip_why.empty() ? stress_trials : 0;  // the first stress trial not run
        for (int i = 0; i < run_to; ++i) {
          try {
            stress_failed +=
                run_trial("stress", i, trial_seed(m_job.base_seed + 1, i), m_job.stress_scale) ? 0
                                                                                               : 1;
          } catch (const kj::error& e) {
            if (e.kind() != error_kind::problem) throw;
            skip_why = headline(e.message());
            run_to = i + 1;
          }
        }
        const bool skipped = !skip_why.empty();
        if (skipped) {
          for (int k = run_to; k < stress_trials; ++k) {
            trial_result rest;
            rest.kind = "stress";
            rest.index = k;
            rest.seed = trial_seed(m_job.base_seed + 1, k);
            rest.shape_scale = m_job.stress_scale;
            rest.skipped = true;
            rest.error = std::string(k_trial_not_run) + skip_why;
            m_events.send({{"trial", rest}});
          }
          m_events.flag("stress_not_applicable", "warning",
                        fmt::format("the stress trials (sizes x{}) were skipped: the problem "
                                    "cannot run at those sizes here: {}; the verdict rests on "
                                    "the nominal and held-out trials",
                                    m_job.stress_scale, skip_why));
        }
        if (!m_stress_scaled && !skipped)
          m_events.flag("stress_not_scaled", "warning",
                        "--shapes stress scaled no size: only sizes the problem's get_inputs() "
                        "draws with popcorn_pri.jitter_int are scaled (those of 7 and above, "
                        "whose scaled value stays within a 64-bit integer), and it drew none "
                        "such (sizes drawn while the models are built stay nominal), so the "
                        "stress trials repeated the nominal shapes");
      }
      note_candidate_changes(false);
      if (passed == m_job.trials && held_out && stress_failed == 0 && m_values_compared == 0)
        m_events.flag("nothing_compared", "warning",
                      "the trials compared no values: every output was empty, or NaN or Inf "
                      "where the reference's was, so the candidate passed without a number "
                      "being checked (look at the problem's outputs)");
      if (passed == 0 && (m_weight_copy == "by_order" || m_weight_copy == "by_shape" ||
                          m_weight_copy == "by_value" || m_weight_copy == "by_name_end"))
        // An honest LayerNorm whose beta is declared before its gamma (both of one shape) had
        // them swapped, every trial failed, and nothing said the pairing was a guess; so did a
        // SwiGLU whose renamed gate and up projections were made in the other order (the seed
        // gave its first the reference's first's values, and the pairing by value followed).
        m_events.flag(
            "weights_paired_by_order", "info",
            fmt::format("every nominal trial failed, and some of the reference's weights were "
                        "paired with the candidate's {} (their names differ): tensors of one "
                        "shape that the candidate declares or makes in another order than the "
                        "reference's Model get each other's values; named as the reference's "
                        "parameters, they are paired by name",
                        m_weight_copy == "by_order"      ? "by declaration order and shape"
                        : m_weight_copy == "by_shape"    ? "by shape"
                        : m_weight_copy == "by_name_end" ? "by the ends of their names"
                                                         : "by the values the seed gave both"));
      if (passed < m_job.trials) {
        std::vector<std::string> also;
        if (!held_out) also.emplace_back("the held-out trial");
        if (stress_failed > 0)
          also.push_back(fmt::format("{} stress-shape trial(s) (sizes x{})", stress_failed,
                                     m_job.stress_scale));
        // Said where the cause may be the weights rather than the code: an honest candidate
        // that fuses three convolutions' weights in another order than the reference's kept
        // values of its own, and only a warning below the trials said so.
        const bool own_weights = m_weight_copy == "seed_only" || m_weight_copy == "partial";
        m_events.final(
            eval_status::incorrect,
            fmt::format("{} of {} nominal trials failed{}{}{}", m_job.trials - passed, m_job.trials,
                        also.empty() ? "" : ", and so did ", fmt::join(also, " and "),
                        own_weights ? " (some of the reference's weights could not be copied "
                                      "into the candidate, which kept values of its own: see "
                                      "weights_not_copied)"
                                    : ""));
        return false;
      }
      if (!held_out) {
        m_events.final(eval_status::incorrect,
                       "all nominal trials passed but the held-out trial failed");
        return false;
      }
      if (stress_failed > 0) {
        m_events.final(eval_status::incorrect,
                       fmt::format("nominal trials passed but {} stress-shape trial(s) failed "
                                   "(sizes x{})",
                                   stress_failed, m_job.stress_scale));
        return false;
      }
    } catch (const kj::error& e) {
      if (e.kind() != error_kind::candidate) throw;
      m_events.final(eval_status::runtime_error, summarised(e.message()));
      return false;
    }
    return true;
  }

  /** Until stop_watch: the first call that queues work on the GPU, from the problem's or the
   *  candidate's import (their module code), waits for the GPU's lock (take_gpu_turn) before it
   *  runs, and the import goes on under it. An import that does not use the GPU (most, however
   *  long they build) runs beside another evaluation's work there; the lock is then taken after
   *  it. Without the watch (a build without CUPTI, or another CUPTI client: Nsight Compute, a
   *  sanitizer), the lock is taken after the imports, as gpu_lock_at then says. */
  void watch_imports() {
    m_main_thread = std::this_thread::get_id();
    m_watch.emplace([this](std::string_view api) {
      // The import of the step the main thread is in; the call may come from a thread that
      // module code started, which waits then while the main thread goes on.
      const bool on_main = std::this_thread::get_id() == m_main_thread;
      const import_step step = m_import_step.load();
      m_gpu_lock_at =
          fmt::format("{}at the first GPU work of the {}'s import ({}{})", m_gpu_lock_before,
                      step == import_step::problem ? "problem" : "candidate", api,
                      on_main ? "" : ", on a thread of its own");
      try {
        take_gpu_turn();
      } catch (...) {
        // Nothing may leave the CUDA call; without the lock, the main thread tries again later.
        if (!m_gpu_turn.held()) m_gpu_lock_path.clear();
        return;
      }
      if (!on_main) return;
      if (step == import_step::candidate) m_import_lock_wait_s = m_gpu_turn.waited().count();
      m_events.phase(step == import_step::problem ? "load_problem" : "load_candidate");
    });
    if (!m_watch->unavailable_reason().empty())
      m_gpu_lock_at = m_gpu_lock_before + "after the imports (their GPU work was not watched: " +
                      m_watch->unavailable_reason() + ")";
  }

  /** After the problem's import: a lock its GPU work took is let go (its work done) and the
   *  candidate's import watched afresh, so that the candidate's build (nvcc, load_inline) does
   *  not hold the GPU from other evaluations; a native candidate's build is not watched (nvcc
   *  does no GPU work). */
  void after_problem_import() {
    stop_watch();
    if (!m_gpu_lock_path.empty()) {
      cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the problem's import");
      release_lock();
      m_gpu_lock_path.clear();
      m_gpu_lock_before = m_gpu_lock_at + ", let go after it; then ";
      m_gpu_lock_at = m_gpu_lock_before + "after the imports";
    }
    if (m_job.kind == candidate_kind::python) watch_imports();
  }

  /** Ends the watch (waiting for a wait for the lock that it began to end), and CUPTI with it. */
  void stop_watch() {
    if (m_watch && m_watch->stop() && !m_watch->detach_error().empty())
      m_events.flag("cupti_attached", "warning",
                    "CUPTI, which watched the imports for GPU work, could not be detached from the "
                    "worker: every CUDA call it makes from now on, timed ones included, may cost "
                    "more (" +
                        m_watch->detach_error() + ")");
  }

  /** The longest a wait for the GPU's or the CPU's lock may take: the job's limit (a third of
   *  --timeout), and at most half of what is left of --timeout, so that what follows still
   *  fits. */
  [[nodiscard]] std::chrono::milliseconds lock_wait_limit() const {
    double limit_s = m_job.gpu_lock_wait_s;
    if (m_job.timeout_s > 0)
      limit_s =
          std::min(limit_s, std::max(0.0, (m_job.timeout_s - m_events.elapsed().count()) / 2));
    return std::chrono::milliseconds(std::llround(limit_s * 1000));
  }

  /** One evaluation at a time works on a GPU: waits (at most the job's limit) for any other
   *  evaluation's work on this GPU to end, and holds the GPU's lock (m_gpu_turn) until its
   *  timing has ended; without it after the wait, it marks itself as working outside it.
   *  Another process's kernels while a side is timed move its figures (on the H200, a process
   *  launching small kernels next to QuantVLA's evaluation read the reference 12.5% lower,
   *  docs/benchmarks.md), not only another evaluation's timing. */
  void take_gpu_turn() {
    // Taken (or waited for) at an import's GPU work already (the path is set before the wait).
    if (!m_gpu_lock_path.empty()) return;
    m_events.phase("wait_gpu_lock");
    m_gpu_lock_path = runner::gpu_lock_path(m_device ? m_device->uuid : std::string());
    m_gpu_turn = runner::file_lock::acquire(m_gpu_lock_path, lock_wait_limit());
    m_events.send(
        {{"gpu_lock", {{"waited_s", m_gpu_turn.waited().count()}, {"at", m_gpu_lock_at}}}});
    if (m_gpu_turn.held()) return;
    m_gpu_lock_error = m_gpu_turn.error();
    // So that the evaluation holding the lock can tell that this one works alongside it.
    m_outside = runner::file_lock::mark(runner::outside_mark_path(m_gpu_lock_path));
    if (!m_outside.held())
      m_gpu_lock_error += fmt::format(" (nor could it say so: {})", m_outside.error());
  }

  /** Before timing or profiling (`what`: "the timing", "the profiled run"; empty when nothing
   *  is measured): a worker that went on without the GPU's lock tries it once more, and says
   *  whether it measures without it. The holder of the lock looks for marks of work outside it. */
  void settle_gpu_turn(std::string_view what) {
    const bool timed = !what.empty();
    if (timed) look_for_other_programs("start");
    if (!m_gpu_turn.held() && !m_gpu_lock_path.empty()) {
      // Out of line: this worker measures whether or not it has the lock, so a free lock taken
      // now keeps the waiter first in line from measuring beside it (that one waits for it).
      m_gpu_turn = runner::file_lock::try_now(m_gpu_lock_path);
      if (m_gpu_turn.held()) {
        m_outside.release();
        m_events.flag("gpu_lock_late", "info",
                      fmt::format("the trials ran without the GPU's lock ({}: {}); {} had it",
                                  m_gpu_lock_path.string(), m_gpu_lock_error,
                                  timed ? what : std::string_view("the rest")));
      } else {
        m_events.flag(
            "gpu_lock_not_held", timed ? "warning" : "info",
            fmt::format("ran without the GPU to itself ({}): {}{}.{}", m_gpu_lock_path.string(),
                        m_gpu_lock_error,
                        m_gpu_turn.error().empty() || m_gpu_turn.error() == m_gpu_lock_error
                            ? std::string()
                            : "; tried again before " + std::string(timed ? what : "the rest") +
                                  ": " + m_gpu_turn.error(),
                        timed ? " Another process's work on the GPU while a side is measured "
                                "moves its figures"
                              : " Nothing was timed"));
        return;
      }
    }
    if (timed) check_gpu_shared(true);
  }

  /** At the start (`when` "start") and the end ("end") of a measurement on the GPU: which
   *  programs other than kjudge hold a context there (gpu_neighbours.hpp). */
  void look_for_other_programs(std::string_view when) {
    if (m_device)
      m_neighbours.add(runner::look_for_neighbours(m_device->uuid, m_device->pci_bus_id), when);
  }

  /** The end's look, then what the looks of the `measured` ("timing", "profiled run") found. */
  void flag_other_programs(std::string_view measured) {
    if (!m_device) return;
    look_for_other_programs("end");
    for (auto& f : m_neighbours.flags(measured))
      m_events.flag(std::move(f.code), std::move(f.severity), std::move(f.message));
  }

  /** By the lock's holder, before (`first`) and after its timing: an evaluation that gave up
   *  waiting for the lock and works on the GPU (its mark, take_gpu_turn) is flagged, once; so is
   *  one that marked itself between the two looks (the mark file's time moved). */
  void check_gpu_shared(bool first) {
    if (m_gpu_shared_flagged || !m_gpu_turn.held()) return;
    if (first || !m_marks) m_marks.emplace(m_gpu_lock_path);
    if (!m_marks->look()) return;
    m_gpu_shared_flagged = true;
    m_events.flag("gpu_shared", "warning",
                  fmt::format("another evaluation worked on this GPU {} this one's timing without "
                              "the GPU's lock (it gave up waiting for it): the figures may be "
                              "moved",
                              first ? "at the start of" : "during"));
  }

  /** The most the timing waits for background CPU to go quiet (wait_for_quiet_background), and
   *  the window it reads that CPU over. */
  static constexpr double background_wait_max_s = 5.0;
  static constexpr double background_wait_window_s = 0.2;

  /** Before the timing: Python threads besides the worker's and the processes the worker
   *  started (a torch.compile candidate's compile workers, which start in the background and
   *  import torch) get up to background_wait_max_s to go quiet, so that their start does not
   *  run beside either side's samples. A wait is said (info); what they use in the timing loop
   *  is still booked to the sides' turns (python_threads_busy). */
  void wait_for_quiet_background() {
    m_events.phase("wait_background_cpu");
    auto w = m_session->background_quiet(background_wait_max_s, background_wait_window_s);
    if (w.windows <= 1) return;  // nothing to watch, or quiet in the first window
    std::sort(w.busy.begin(), w.busy.end(),
              [](const auto& a, const auto& b) { return a.cpu_s > b.cpu_s; });
    std::vector<std::string> named;
    for (const auto& t : w.busy) named.push_back(thread_text(t));
    const std::string who = named.empty() ? std::string() : " (" + listed(named, 4, ", ") + ")";
    if (w.quiet)
      m_events.flag("waited_for_background_cpu", "info",
                    fmt::format("Python threads and processes started from the worker were "
                                "using the CPU when the timing was to start{}: kjudge waited "
                                "{:.2f} s for them to go quiet before it began",
                                who, w.waited_s));
    else
      m_events.flag("waited_for_background_cpu", "info",
                    fmt::format("Python threads and processes started from the worker were "
                                "still using the CPU after kjudge waited {:.2f} s (at most about "
                                "{:.0f} s) before the timing{}; the timing went ahead, and the "
                                "CPU they use during the reference's turns is judged "
                                "(python_threads_busy)",
                                w.waited_s, background_wait_max_s, who));
  }

  /** On the CPU, one evaluation's timing at a time: waits (at most the job's lock limit, and at
   *  most half of what is left of --timeout) for another evaluation's timing to end, and holds
   *  the CPU's lock (m_cpu_turn) until its own has; without it after the wait, it times anyway
   *  and says so. torch's CPU operators use every core: two timings side by side each read the
   *  other's load (on a 2-core machine both read a 5 us softmax at 7.9 ms before samples that
   *  waited for a CPU were discarded, and most of their samples go now). The trials run beside
   *  other evaluations' work. */
  void take_cpu_turn() {
    m_events.phase("wait_cpu_lock");
    const auto path = runner::cpu_lock_path();
    m_cpu_turn = runner::file_lock::acquire(path, lock_wait_limit());
    m_events.send({{"cpu_lock", {{"waited_s", m_cpu_turn.waited().count()}}}});
    if (!m_cpu_turn.held())
      m_events.flag("cpu_lock_not_held", "warning",
                    fmt::format("timed without the CPU to itself ({}): {}. Another evaluation's "
                                "timing on the same CPUs moves both; samples whose threads "
                                "waited for a CPU are discarded (cpu_wait_samples)",
                                path.string(), m_cpu_turn.error()));
  }

  void run_timing() {
    const bool gpu = m_job.device == "cuda";
    // On the CPU, the CPU's turn first (a wait for it would make the look at the background
    // stale); then the wait for background CPU to go quiet; on a GPU the GPU's turn is settled,
    // and other programs looked for, right before the timing begins.
    if (!gpu) take_cpu_turn();
    wait_for_quiet_background();
    if (gpu) settle_gpu_turn("the timing");
    m_events.phase("timing_setup");
    auto opts = m_job.timing_options;
    opts.gpu = gpu;
    // The timing's set-up and loop end by half of what is left of --timeout, whatever the
    // budget: the checks, audits and recorded forward after the loop take the other half (a 384 MiB
    // add's took 3 s, more than its loop under the default budget). A --budget or --precise the
    // limit cannot hold then ends in figures that say so, where it ended the evaluation as timed
    // out.
    if (m_job.timeout_s > 0)
      opts.deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(
                              std::max(0.0, (m_job.timeout_s - m_events.elapsed().count()) / 2)));
    // Rotate among several input sets, bounded so that large problems do not exhaust memory.
    // A native candidate's parameters and outputs per set only when cold: warm, the copies
    // would leave L2 where the reference's one copy of its weights stays.
    const auto ti = m_session->timing_setup(
        std::clamp<std::size_t>(opts.max_input_sets, 2, max_input_sets), m_job.base_seed ^ 0x5eed,
        m_job.timing_key, 1ull << 30, opts.cold && gpu);
    const auto& info = ti.shapes;
    const std::size_t sets = ti.sets;
    const std::uint64_t set_bytes = ti.bytes_per_set;
    m_events.send({{"timing_inputs",
                    {{"sets", sets},
                     {"shapes", info.shapes},
                     {"dtypes", info.dtypes},
                     {"jitter", info.jitter},
                     {"bytes_per_set", set_bytes},
                     {"native_buffers_per_set", m_job.kind == candidate_kind::native
                                                    ? nlohmann::json(ti.native_buffers_per_set)
                                                    : nlohmann::json(nullptr)},
                     {"output_bytes", ti.output_bytes},
                     {"shrink_only_inputs", ti.shrink_only_inputs}}}});
    if (ti.varied_inputs == 0)
      m_events.flag("timing_inputs_repeat", "info",
                    fmt::format("no input of the problem is floating-point, so its inputs cannot "
                                "be changed from sample to sample: the samples of each of the {} "
                                "input sets see the same values, and a candidate that kept its "
                                "outputs by input values would replay them unseen "
                                "(docs/methodology.md, Timing 8)",
                                sets));

    // This thread keeps every signal blocked while it times and checks the timed calls: a C
    // signal handler of the candidate's, on a timer its forward armed, ran here after the clock
    // stopped and computed the output the call had returned empty (correct at 22-57x, the timed
    // calls doing nothing). Signals for this thread wait until the checks are done (Python
    // handlers and pending calls that come due during a call run in that call: bridge.cpp).
    std::optional<runner::signals_blocked> unhandled(std::in_place);
    auto [reference, candidate] = make_targets(sets);
    measure::device_facts facts;
    if (m_device) facts.l2_bytes = m_device->l2_bytes;
    m_events.phase("timing");
    m_session->thread_turns_begin();
    m_session->audit_begin();
    auto cmp = measure::time_pair(*reference, *candidate, m_session->stream(), facts, opts);
    m_cpu_turn.release();  // the CPU's turn covers the samples alone
    const std::size_t audits = m_session->audit_end();
    const std::string busy = busy_threads(m_session->thread_turns_end());
    if (gpu) flag_other_programs("timing");
    note_candidate_changes(true);
    // A device figure that replayed a side's CUDA graphs: they are checked as well.
    const auto replayed = [](const measure::side_result& s) {
      return s.device.method == measure::graph_device_method;
    };
    auto withheld = check_timed_outputs(replayed(cmp.reference),
                                        replayed(cmp.candidate) ? &*candidate : nullptr);
    if (withheld.candidate.empty()) withheld.candidate = audit_timed_calls(audits);
    unhandled.reset();
    // The graphs and their memory pools go before the CUPTI forward measures peak memory.
    reference->drop_graphs();
    candidate->drop_graphs();
    const std::string& replay = withheld.candidate;
    if (!replay.empty())
      withhold(cmp, {&cmp.candidate.device, &cmp.candidate.stream, &cmp.candidate.host_wall},
               replay);
    if (!withheld.reference.empty()) withhold(cmp, {&cmp.reference.device}, withheld.reference);
    // After timing, one cold-L2 forward per side under CUPTI (launches, durations, peak memory).
    // Before the timing is sent: a side whose kernels ran outside the events (work on a stream
    // the timed one never waited for) has stream and device figures that do not cover it.
    if (gpu && replay.empty()) {
      const auto escaped = record_launches(*reference, *candidate, ti.output_bytes);
      for (const auto& [side, why] : {std::pair{&cmp.reference, escaped.reference},
                                      std::pair{&cmp.candidate, escaped.candidate}})
        if (!why.empty()) withhold(cmp, {&side->device, &side->stream}, why);
    }
    // Then the invariants, on the figures that stand: one that fails is sent as invalid, never
    // as a number (a withheld figure raises no flag of its own besides why it was withheld).
    if (!busy.empty())
      withhold(cmp,
               {&cmp.reference.stream, &cmp.reference.host_wall, &cmp.candidate.stream,
                &cmp.candidate.host_wall},
               busy);
    const auto flags =
        check_timing(cmp, m_device ? &*m_device : nullptr, set_bytes + ti.output_bytes);
    m_events.send({{"timing", cmp}});
    for (const auto& f : flags) m_events.flag(f.code, f.severity, f.message);
    if (!busy.empty()) m_events.flag("python_threads_busy", "warning", busy);
    if (!withheld.reference.empty())
      m_events.flag("reference_graph_differs", "warning", withheld.reference);
    if (!replay.empty()) {
      m_events.flag("timing_outputs_differ", "error", replay);
      m_timing_failed = replay;
      return;
    }
    if (gpu) check_gpu_shared(false);
  }

  /** Why the host-side figures cannot stand, from the CPU time Python threads besides the
   *  worker's own used during the reference's turns of the timing loop; "" when it is under 2%
   *  of those turns' wall time (and under 20 ms). Such a thread shares the CPU with the
   *  reference's host work and not, or not as much, with the candidate's: a candidate's thread
   *  that hashed while the reference was timed, and paused for its own forwards, read 1.84x host
   *  wall for the same matmul on the CPU. CPU used during the candidate's own turns (a pool that
   *  works for its forwards) competes only with the candidate and is left alone. The device
   *  figure, GPU time, stands either way. */
  /** "name (process 123): 0.36 s": a thread or process and the CPU it used. */
  static std::string thread_text(const python::thread_cpu& t) {
    return fmt::format("{} ({} {}): {:.2f} s", t.name, t.process ? "process" : "thread", t.tid,
                       t.cpu_s);
  }

  static std::string busy_threads(const python::thread_turns& turns) {
    const auto& ref = turns.reference;
    double total = 0.0;
    std::vector<std::string> named;
    for (const auto& t : ref.threads) {
      total += t.cpu_s;
      named.push_back(thread_text(t));
    }
    if (total < std::max(0.02, 0.02 * ref.wall_s)) return "";
    return fmt::format(
        "Threads besides the one that runs the forwards (Python's; on the CPU, any the worker "
        "started since the candidate's code first ran), and processes started from the worker, "
        "used {:.2f} s of CPU during the "
        "reference's {:.2f} s of turns in the timing loop ({}): they competed with the "
        "reference's host work and not, or less, with the candidate's, so the host-side figures "
        "(stream, host wall) are withheld. Threads the problem's own forward starts (a thread "
        "pool of its reference's) count too: kjudge cannot tell them from the candidate's, "
        "which may start threads at any time; such a problem is judged by the device figure on "
        "a GPU, and has no figure to compare on the CPU",
        total, ref.wall_s, listed(named, 4, ", "));
  }

  /** Marks each of `figures` (of `cmp`'s sides) withheld for `why`, and the speedups of their
   *  kinds invalid. */
  static void withhold(measure::comparison& cmp, std::initializer_list<measure::figure*> figures,
                       const std::string& why) {
    for (auto* f : figures) {
      if (f->valid) f->valid = false, f->note = "withheld: " + why;
      for (auto& s : cmp.speedups)
        if (s.kind == f->kind) s.valid = false;
    }
  }

  /** Per side, why its forward's kernels were not all inside its events; empty when they were
   *  (or CUPTI could not say). */
  struct escaped_work {
    std::string reference, candidate;
  };

  /** A native call on timing set k: its inputs, parameters and outputs (no workspace yet). */
  std::unique_ptr<native::call_record> timing_call(std::size_t k) {
    return std::make_unique<native::call_record>(
        m_session->timing_native_inputs(k), m_session->timing_native_params(k),
        m_session->timing_native_outputs(k), m_session->stream());
  }

  /** The timing targets of both sides over `sets` input sets (timing_setup first). */
  std::pair<std::unique_ptr<measure::target>, std::unique_ptr<measure::target>> make_targets(
      std::size_t sets) {
    auto reference = m_session->make_target(python::side::reference);
    if (m_job.kind == candidate_kind::python)
      return {std::move(reference), m_session->make_target(python::side::candidate)};
    std::vector<std::unique_ptr<native::call_record>> calls;
    for (std::size_t i = 0; i < sets; ++i) {
      auto rec = timing_call(i);
      ensure_workspace(rec->shape_only());
      calls.push_back(std::move(rec));
    }
    for (auto& rec : calls) rec->set_workspace(m_workspace->data(), m_workspace->size());
    auto candidate = std::make_unique<native::native_target>(
        *m_library, std::move(calls), [this](std::size_t sample) {
          return m_session->timing_refresh(python::side::candidate, sample);
        });
    return {std::move(reference), std::move(candidate)};
  }

  /** One cold-L2 forward per side under CUPTI; sends {"launches": ...} and the checks' flags. */
  escaped_work record_launches(measure::target& reference, measure::target& candidate,
                               std::uint64_t output_bytes) {
    m_events.phase("launches");
    profile::activity_collector collector;
    forward_context ctx;
    ctx.session = &*m_session;
    ctx.stream = m_session->stream();
    std::optional<measure::detail::l2_flusher> flusher;
    if (m_device && m_device->l2_bytes > 0) flusher.emplace(m_device->l2_bytes);
    ctx.flusher = flusher ? &*flusher : nullptr;
    ctx.output_bytes = output_bytes;
    ctx.device_memory_bytes = m_device ? m_device->total_memory_bytes : 0;
    std::string why;
    const auto ref = record_forward(reference, ctx, collector, why);
    if (m_job.kind == candidate_kind::native) ctx.output_bytes = 0;  // preallocated by kjudge
    const auto cand = ref ? record_forward(candidate, ctx, collector, why) : std::nullopt;
    if (!ref || !cand) {
      m_events.flag("cupti_unavailable", "info",
                    "launch counts, kernel durations and peak memory were not recorded: " + why);
      return {};
    }
    nlohmann::json out = {{"reference", profile::to_json(*ref)},
                          {"candidate", profile::to_json(*cand)}};
    out["fusion_ratio"] = profile::fusion_ratio(ref->launches, cand->launches);
    m_events.send({{"launches", out}});
    escaped_work escaped;
    for (const auto& [side, f] : {std::pair{"reference", &*ref}, std::pair{"candidate", &*cand}}) {
      for (const auto* flags : {&f->launches.flags(), &f->memory.flags()})
        for (const auto& fl : *flags) {
          if (fl.code == profile::no_data_code) continue;
          m_events.flag(fl.code, fl.severity, fmt::format("{}: {}", side, fl.message));
          if (fl.code == profile::kernels_outside_timed_region_code)
            (f == &*ref ? escaped.reference : escaped.candidate) = fl.message;
        }
    }
    return escaped;
  }

  /** Under Nsight Compute: each side twice unprofiled (warm-up: lazy loading, autotuning,
   *  allocator growth), then once inside its NVTX range, which ncu's --nvtx-include selects. */
  void run_profile_ranges() {
    settle_gpu_turn("the profiled run");
    m_events.phase("profile_setup");
    const auto ti =
        m_session->timing_setup(1, m_job.base_seed ^ 0x5eed, m_job.timing_key, 1ull << 30, false);
    auto [reference, candidate] = make_targets(ti.sets);
    for (const bool is_ref : {true, false}) {
      measure::target& t = is_ref ? *reference : *candidate;
      m_events.phase(fmt::format("profile {}", is_ref ? "reference" : "candidate"));
      if (!is_ref) m_candidate_ran = true;
      for (int i = 0; i < 2; ++i) {
        t.prepare(0);
        t.run();
        m_session->synchronize_candidate();
      }
      t.prepare(0);
      m_session->synchronize_candidate();
      const std::string range(is_ref ? profile::ncu_reference_range : profile::ncu_candidate_range);
      nvtxRangePushA(range.c_str());
      t.run();
      m_session->synchronize_candidate();
      nvtxRangePop();
    }
    check_gpu_shared(false);
    flag_other_programs("profiled run");
  }

  /** Why a side's timed figures cannot stand, from check_timed_outputs (empty: they can). */
  struct withheld_figures {
    std::string reference;  ///< its CUDA graph's outputs differ from its forward's
    std::string candidate;  ///< its outputs after timing differ from the reference's
  };

  /** The reference's and candidate's outputs of a check, compared; why they differ or "". */
  std::string differences(python::session::check_source source, std::size_t sample) {
    const auto out = m_session->timing_check_finish(source, sample);
    std::vector<output_check> checks;
    std::string error;
    if (compare_outputs(out, checks, error,
                        source == python::session::check_source::reference_graph
                            ? "the reference's CUDA graph"
                        : source == python::session::check_source::reference_again
                            ? "the reference's second run"
                            : "the candidate"))
      return "";
    for (const auto& c : checks)
      if (!c.passed) error += (error.empty() ? "" : "; ") + c.message;
    return error;
  }

  /** The kept outputs of `count` of a Python candidate's calls in the timing loop (drawn by the
   *  timing key, where it could not foresee which), each against the reference's forward on the
   *  same sample number (the same rewrite and generator seed); why one differs, or "". A forward
   *  that did its work only where it guessed it was not timed (after the loop, or after a pause
   *  without a repeated seed) passes the post-timing check and fails here. */
  std::string audit_timed_calls(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      m_events.phase(fmt::format("timing audit {}", i));
      const auto [sample, unreadable] = m_session->timing_audit_begin(i);
      const std::string e = unreadable.empty()
                                ? differences(python::session::check_source::candidate, sample)
                                : fmt::format("its outputs could not be read: {}", unreadable);
      if (!e.empty()) {
        const std::string repeats =
            unreadable.empty()
                ? reference_repeats_on(sample, fmt::format("timed sample {}", sample))
                : std::string();
        return fmt::format(
            "a call of the candidate's in the timing loop (sample {}, one of {} whose outputs "
            "kjudge kept, drawn where the candidate could not foresee which) does not match the "
            "reference's output on the same inputs ({}): the candidate computes differently "
            "while timed than when checked (docs/methodology.md, Timing 8){}",
            sample, count, e, repeats);
      }
    }
    return "";
  }

  /** After sampling, both sides run once more on a fresh rewrite of the inputs and must agree; a
   *  candidate that replays results cached during timing does not. With `graph_candidate` (the
   *  device figure replayed its CUDA graphs), each set's graph is then replayed on another fresh
   *  rewrite and must agree too: a graph that captured less than the forward computes does not.
   *  With `reference_graphs` (the reference's device figure replayed its graphs, which live in
   *  the harness), likewise the reference's graph against its own forward. */
  withheld_figures check_timed_outputs(bool reference_graphs, measure::target* graph_candidate,
                                       bool after_timing = true) {
    using source = python::session::check_source;
    withheld_figures out;
    // Every set, each with a factor no sample used: whatever a candidate cached, on whichever
    // buffer, is stale now. Timed samples are numbered upward from 0 per side (about sets + 1 a
    // round); the check's numbers come after theirs, and every number's generator seed and
    // input factor are a keyed hash of it (the job's timing key), so that what a forward can
    // read does not give it the number of its call. The pattern of the calls still differs
    // from a timed turn's (a known limit: docs/methodology.md, Timing 8).
    const std::size_t sets = m_session->timing_sets();
    const std::size_t first = m_session->timing_check_first_sample();
    for (const bool graph : {false, true}) {
      if (graph && graph_candidate == nullptr && !reference_graphs) break;
      for (std::size_t i = 0; i < sets; ++i) {
        const std::size_t sample = first + (graph ? sets : 0) + i;
        m_events.phase(fmt::format("timing check {} reference", i));
        const auto k = m_session->timing_check_begin(sample);
        if (graph && reference_graphs && out.reference.empty()) {
          m_events.phase(fmt::format("timing check {} reference graph replay", i));
          m_session->timing_check_reference_graph(sample);
          if (const auto e = differences(source::reference_graph, sample); !e.empty())
            out.reference = fmt::format(
                "after timing, on fresh (rescaled) inputs of set {}, a replay of the reference's "
                "CUDA graph (which its device figure timed) does not match its forward ({}): "
                "the graph does not hold all the work the forward does",
                i, e);
        }
        if (graph && graph_candidate == nullptr) continue;
        m_events.phase(
            fmt::format("timing check {} candidate {}", i, graph ? "graph replay" : "forward"));
        if (graph) {
          replay_candidate_graph(*graph_candidate, sample, k);
        } else {
          run_candidate_once(sample, k);
        }
        const auto e = differences(
            m_job.kind == candidate_kind::native ? source::native : source::candidate, sample);
        if (e.empty()) continue;
        const std::string repeats = reference_repeats_on(
            sample,
            fmt::format("{} set {}",
                        after_timing ? "the post-timing check's" : "the nominal-size check's", i));
        out.candidate =
            graph ? fmt::format(
                        "after timing, on fresh (rescaled) inputs of set {}, a replay of the "
                        "candidate's CUDA graph (which the device figure timed) does not match "
                        "the reference's output ({}): the graph does not hold all the work the "
                        "forward does",
                        i, e)
            : after_timing
                ? fmt::format(
                      "after timing, on fresh (rescaled) inputs of set {}, the candidate's "
                      "output does not match the reference's ({}): it may replay results "
                      "cached during timing, take a path of its own at the problem's nominal "
                      "sizes (the timed ones, which the trials' jitter seldom draws), or rely on "
                      "values that scaling changes (targets of +-1, 0/1 masks; "
                      "docs/methodology.md, Timing)",
                      i, e)
                : fmt::format(
                      "at the problem's nominal sizes (which the trials' jitter seldom draws), "
                      "on inputs of set {} (their floating-point values rescaled, as the timed "
                      "sets' are), the candidate's output does not match the reference's ({}): "
                      "a path of its own for the nominal shape, or values the rescaling changes "
                      "(targets of +-1, 0/1 masks; docs/methodology.md, Timing)",
                      i, e);
        out.candidate += repeats;
        return out;
      }
    }
    return out;
  }

  /** With --no-timing, the check that follows timing otherwise: every trial jitters the sizes
   *  (7 and above), so without it a candidate wrong at the nominal sizes alone, the ones a
   *  benchmark times, would pass. Both sides on two sets of inputs at those sizes. */
  void check_nominal_sizes() {
    m_events.phase("nominal sizes check");
    const auto ti =
        m_session->timing_setup(2, m_job.base_seed ^ 0x5eed, m_job.timing_key, 1ull << 30, false);
    if (m_job.kind == candidate_kind::native)
      for (std::size_t k = 0; k < ti.sets; ++k) ensure_workspace(timing_call(k)->shape_only());
    const auto withheld = check_timed_outputs(false, nullptr, false);
    if (withheld.candidate.empty()) return;
    m_events.flag("nominal_sizes_differ", "error", withheld.candidate);
    m_timing_failed = withheld.candidate;
  }

  /** The candidate's forward on its timing set k, rewritten for `sample`, for
   *  check_timed_outputs. */
  void run_candidate_once(std::size_t sample, std::size_t k) {
    if (m_job.kind == candidate_kind::python) {
      m_session->timing_check_candidate(sample);
      return;
    }
    const auto rec = timing_call(k);
    rec->set_workspace(m_workspace->data(), m_workspace->size());
    m_library->forward(rec->call());
    m_session->synchronize_candidate();
  }

  /** The candidate's graph of set k replayed on the rewrite for `sample`, for
   *  check_timed_outputs. */
  void replay_candidate_graph(measure::target& candidate, std::size_t sample, std::size_t k) {
    if (m_job.kind == candidate_kind::python) {
      m_session->timing_check_candidate_graph(k, sample);
      return;
    }
    candidate.prepare(sample);  // the rewrite timing_check_begin made; selects set k
    candidate.run_graph();
    m_session->synchronize_candidate();
  }

  const job& m_job;
  event_writer& m_events;
  std::optional<python::session> m_session;
  std::optional<cuda::device_properties> m_device;
  std::optional<std::filesystem::path> m_native_library;  // built, not yet loaded
  std::optional<open_file> m_native_file;                 // m_native_library, until loaded
  std::optional<native::candidate_library> m_library;
  std::future<compile::build_result> m_build;
  std::shared_future<cuda::device_properties> m_device_query;
  std::future<void> m_context;
  std::optional<cuda::device_buffer> m_workspace;
  std::optional<double> m_atol, m_rtol;
  /** An output of an earlier trial: its reference's and the candidate's bytes (hashes) and
   *  the reference's sums (output_check). */
  struct seen_output {
    std::uint64_t reference_hash = 0, candidate_hash = 0;
    double reference_sum = 0, reference_abs_sum = 0;
  };
  std::vector<std::vector<seen_output>> m_seen_outputs;  ///< by output index
  /** Output elements finite on both sides (or integer) that the nominal and held-out trials
   *  compared: 0 where every output was empty, or NaN or Inf where the reference's was. */
  std::uint64_t m_values_compared = 0;
  bool m_stress_scaled = false;      ///< a stress trial drew a size that its scale changed
  bool m_reference_rerun = false;    ///< check_reference_repeats ran (once an evaluation)
  std::string m_weight_copy;         ///< how the reference's weights went into the candidate
  bool m_own_weights_tried = false;  ///< own_weights_pass ran (once an evaluation)
  double m_stress_bytes = 0;  ///< one copy of the stress inputs, estimated (stress_too_large)
  bool m_candidate_ran = false;
  std::string m_timing_failed;            ///< why the post-timing output check failed, if it did
  std::filesystem::path m_gpu_lock_path;  ///< empty until take_gpu_turn
  std::string m_gpu_lock_error;           ///< why the lock was not had when it was waited for
  std::optional<runner::outside_marks> m_marks;  ///< looked at from the first check_gpu_shared
  runner::file_lock m_gpu_turn;  ///< the GPU's lock (take_gpu_turn); goes first when this does
  runner::file_lock m_outside;   ///< the mark of working without it, when it was not had
  runner::file_lock m_cpu_turn;  ///< the CPU's lock (take_cpu_turn) while the CPU is timed
  bool m_gpu_shared_flagged = false;
  /// Programs other than kjudge on the GPU (look_for_other_programs).
  runner::neighbour_watch m_neighbours;
  /// Where the GPU's lock was taken (the gpu_lock event's "at").
  std::string m_gpu_lock_at = "after the imports";
  /// What the problem's import did with the lock, when it took it and let it go.
  std::string m_gpu_lock_before;
  double m_import_lock_wait_s = 0;  ///< of the candidate's import: taken off its build time
  enum class import_step { problem, candidate };
  std::atomic<import_step> m_import_step{import_step::problem};  ///< read by the watch's handler
  std::thread::id m_main_thread;
  /// The imports' first GPU work (watch_imports); last, so that it goes first.
  std::optional<profile::gpu_work_watch> m_watch;
};

}  // namespace

void run_worker(const job& j, event_writer& events, const std::function<void()>& before_teardown) {
  pipeline p(j, events);
  finally_call done{before_teardown};
  // Destroyed before `done` runs the teardown, which ends the process without destroying `p`.
  struct gpu_release {
    pipeline& p;
    ~gpu_release() { p.release_gpu(); }
  } gpu_lock_guard{p};
  try {
    p.run();
  } catch (const kj::error& e) {
    switch (e.kind()) {
      case error_kind::problem:
        events.final(eval_status::problem_error, summarised(e.message()));
        break;
      case error_kind::candidate:
        events.final(eval_status::runtime_error, summarised(e.message()));
        break;
      case error_kind::cuda:
        if (p.candidate_ran()) {
          // Outside the targets, in practice a sticky error the candidate left behind.
          events.final(eval_status::runtime_error, e.message());
        } else {
          events.final(eval_status::internal_error,
                       "the GPU is not usable before any candidate code ran: " + e.message());
        }
        break;
      case error_kind::usage:
        events.final(eval_status::internal_error, e.message());
        break;
      default:
        events.final(eval_status::internal_error, e.what());
        break;
    }
  } catch (const std::bad_alloc&) {
    // Said as what it is: the report read only "std::bad_alloc" where a memory limit left too
    // little for the copies of a 400 MB problem's inputs and outputs.
    events.final(eval_status::internal_error,
                 "kjudge ran out of host memory in its own work (std::bad_alloc): too little was "
                 "left for this problem's sizes next to the copies of its inputs and outputs "
                 "that kjudge keeps (the machine's memory, a limit on the worker's, or memory "
                 "the candidate's code holds; the result's worker.last_phase says where)");
  } catch (const std::exception& e) {
    events.final(eval_status::internal_error, e.what());
  }
}

}  // namespace kj::eval
