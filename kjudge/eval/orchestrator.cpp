#include <kjudge/eval/orchestrator.hpp>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <random>
#include <sstream>
#include <vector>

#include <kjudge/compile/cache.hpp>
#include <kjudge/compile/shared_library_check.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/core/source_commit.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/core/timestamp.hpp>
#include <kjudge/eval/protocol.hpp>
#include <kjudge/eval/worker_pool.hpp>
#include <kjudge/runner/pool.hpp>
#include <kjudge/runner/process.hpp>

namespace kj::eval {

namespace fs = std::filesystem;

std::uint64_t fresh_secret() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

bool nvidia_driver_present() {
  std::error_code ec;
  return fs::exists("/proc/driver/nvidia/version", ec) || fs::exists("/dev/nvidiactl", ec);
}

namespace {

std::string hash_or_empty(const fs::path& p) {
  try {
    return sha256_file(p);
  } catch (const kj::error&) {
    return "";
  }
}

/** <cache>/torch_extensions/<16 hex digits of the candidate's bytes and real path, the
 *  problem's bytes and the interpreter>. */
fs::path torch_extensions_dir(const job& j) {
  // The interpreter's path as given, links not followed: a venv's python3 is a link to the
  // base interpreter, and two venvs hold two torch builds.
  std::error_code ec;
  const fs::path python = fs::absolute(j.python, ec).lexically_normal();
  // A candidate's sources need not be its own bytes: one that reads them from a file beside it,
  // or writes them from the problem's sizes, builds other sources under one extension name from
  // the same bytes. Its real path and the problem's bytes keep those apart (two copies of one
  // file in two folders, one file against two problems).
  std::error_code real_ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(j.candidate, real_ec), real_ec);
  const std::string content = hash_or_empty(j.candidate);
  const std::string problem = hash_or_empty(j.problem);
  const std::string key = sha256_hex(fmt::format(
      "{}\n{}\n{}\n{}", content.empty() ? "unreadable" : content,
      real_ec ? j.candidate.string() : real.string(), problem.empty() ? "unreadable" : problem,
      ec ? j.python.string() : python.string()));
  return j.cache_dir / "torch_extensions" / key.substr(0, 16);
}

/** Phases in which a crash is the problem's fault rather than the candidate's. */
bool reference_phase(const std::string& phase) {
  return phase == "load_problem" || phase.ends_with(" reference");
}

/** Whether the reported trials are the ones the job asked for: each nominal trial once with its
 *  seed, one held-out trial with the secret seed, each stress trial once with its seed. Empty, or
 *  what is wrong. */
std::string trials_mismatch(const job& j, const eval_result& r) {
  std::vector<bool> nominal(static_cast<std::size_t>(std::max(j.trials, 0)), false);
  std::vector<bool> stress(static_cast<std::size_t>(stress_trials), false);
  int held_out = 0;
  for (const auto& t : r.trials) {
    const bool nominal_kind = t.kind == "nominal", stress_kind = t.kind == "stress";
    if (t.kind == "held_out") {
      if (t.seed != j.held_out_seed) return "the held-out trial's seed is not the held-out seed";
      ++held_out;
      continue;
    }
    auto& seen = nominal_kind ? nominal : stress;
    const std::uint64_t base = nominal_kind ? j.base_seed : j.base_seed + 1;
    if ((!nominal_kind && !stress_kind) || t.index < 0 ||
        static_cast<std::size_t>(t.index) >= seen.size())
      return fmt::format("a trial the job has none of ({} {})", t.kind, t.index);
    if (t.seed != trial_seed(base, t.index))
      return fmt::format("{} trial {} carries another seed than its own", t.kind, t.index);
    if (seen[static_cast<std::size_t>(t.index)])
      return fmt::format("{} trial {} was reported twice", t.kind, t.index);
    seen[static_cast<std::size_t>(t.index)] = true;
  }
  if (held_out > 1) return "more than one held-out trial was reported";
  return "";
}

/** A "correct" verdict stands only with its evidence: every trial reported and passed, each the
 *  trial the job asked for (its seed, once), nothing sent after the final event, and the worker
 *  ending normally. The candidate runs inside the worker and could write to its event pipe;
 *  this turns a forged, repeated or truncated report into a failure instead of a pass. It raises
 *  the bar, no more: code in the worker's process can read the worker's memory
 * (docs/methodology.md, Processes). */
void check_verdict(const job& j, const runner::process_result& p, const fold_state& state,
                   eval_result& r) {
  if (r.status != eval_status::correct) return;
  const auto& c = r.correctness;  // summarize_correctness has counted the reported trials
  std::string missing;
  if (state.lines_after_final > 0)
    missing = fmt::format("{} event line(s) followed the final verdict", state.lines_after_final);
  else if (!state.repeated_events.empty())
    missing = fmt::format("the '{}' event, which the worker sends once, came more than once",
                          state.repeated_events.front());
  else if (state.events_dropped > 0)
    missing = fmt::format("{} phase or trial event(s) beyond what an evaluation sends were dropped",
                          state.events_dropped);
  else if (auto wrong = trials_mismatch(j, r); !wrong.empty())
    missing = wrong;
  else if (c.trials != j.trials || c.trials_passed != j.trials)
    missing = fmt::format("{} of {} nominal trials reported passed", c.trials_passed, j.trials);
  else if (!c.held_out_passed)
    missing = "no passed held-out trial was reported";
  else if (j.stress && (c.stress_trials != stress_trials ||
                        c.stress_passed + c.stress_skipped != c.stress_trials))
    missing = "the stress trials were not all reported passed (or skipped)";
  else if (j.timing && !r.timing)
    missing = "no timing was reported";
  if (!missing.empty()) {
    r.status = eval_status::incorrect;
    r.message = "the worker reported 'correct' without the evidence for it: " + missing;
    r.add_flag("unverified_verdict", "error", r.message);
    return;
  }
  if (!p.ok()) {
    r.status = p.how == runner::exit_kind::timed_out ? eval_status::timed_out
               : p.how == runner::exit_kind::lost    ? eval_status::internal_error
                                                     : eval_status::crashed;
    r.message = fmt::format("the worker reported 'correct' but then {}", p.describe());
    r.add_flag("unverified_verdict", "error", r.message);
  }
}

/** The worker's events, line by line, folded into `r`. */
void fold_channel(std::string_view channel, eval_result& r, fold_state& state) {
  for (std::size_t at = 0; at < channel.size();) {
    const std::size_t end = std::min(channel.find('\n', at), channel.size());
    apply_event_line(r, channel.substr(at, end - at), state);
    at = end + 1;
  }
}

/** This machine's memory (sysconf), 0 where it cannot be read. */
std::uintmax_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0
             ? static_cast<std::uintmax_t>(pages) * static_cast<std::uintmax_t>(page)
             : 0;
}

/** How a worker that sent no verdict ended: "was killed by signal 9 (SIGKILL)", "exited ...". */
std::string worker_ending(const runner::process_result& p) {
  return fmt::format("{}{}", p.how == runner::exit_kind::signaled ? "was " : "", p.describe());
}

/** What the reference did alone: crashed (its worker ended without a verdict in the phase asked
 *  for, or anywhere in a run of k_reference_alone_all), failed (a problem error), ran through
 *  (a correct verdict), and in words: how it crashed or failed, "ran through the same trials",
 *  or what else happened, which decides nothing. */
struct alone_outcome {
  bool crashed = false;
  bool failed = false;
  bool ran_through = false;
  std::string text;
  std::string verdict{};     ///< the first line of its verdict's message, where it sent one
  std::string last_phase{};  ///< the last phase it reported (where a verdict came: its step)
};

/** The reference alone (job::reference_alone_until) in a fresh worker started as `so` starts one,
 *  within `limit`, until the phase `until`. The worker loads the problem from bytes that hash to
 *  `problem_sha256`. */
alone_outcome reference_alone(const job& j, runner::spawn_options so,
                              std::chrono::milliseconds limit, const std::string& until,
                              const std::string& problem_sha256) {
  job alone = j;
  alone.reference_alone_until = until;
  // The bytes the crashed worker loaded: a candidate that rewrote the problem file before it
  // crashed the worker would have the reference alone crash on a problem of its own.
  alone.problem_sha256 = problem_sha256;
  alone.timing = false;
  alone.orchestrator_pid = static_cast<int>(::getpid());
  alone.timeout_s = std::chrono::duration<double>(limit).count();
  so.timeout = limit;
  so.echo_output = false;
  so.stdin_data = to_json(alone).dump();
  const runner::process_result p = runner::run_process(so);
  eval_result seen;
  fold_state state;
  fold_channel(p.channel, seen, state);
  if (state.final_seen) {
    if (seen.status == eval_status::correct)
      return {.ran_through = true, .text = "ran through the same trials"};
    std::string verdict = seen.message.substr(0, seen.message.find('\n'));
    return {.failed = seen.status == eval_status::problem_error,
            .text = fmt::format("ended {}: {}", to_string(seen.status), verdict),
            .verdict = std::move(verdict),
            .last_phase = state.last_phase};
  }
  if (p.how == runner::exit_kind::timed_out) return {.text = "timed out: nothing decided"};
  // The whole run's crash counts in the problem's own steps only (not in the interpreter's or
  // torch's start).
  const bool problem_step = until == k_reference_alone_all ? reference_phase(state.last_phase) ||
                                                                 state.last_phase == "timing_setup"
                                                           : state.last_phase == until;
  if (!problem_step || (p.how != runner::exit_kind::signaled && p.how != runner::exit_kind::exited))
    return {.text =
                fmt::format("ended in '{}' ({}): nothing decided", state.last_phase, p.describe())};
  return {.crashed = true,
          .text = fmt::format("its worker {} during '{}'", worker_ending(p), state.last_phase)};
}

/** Whether the reference-alone run of k_reference_alone_all repeats what the worker did in
 *  `phase`, the last before its verdict: the candidate's loading and the models' building (the
 *  tolerance is read there), a nominal or held-out trial's calls, the timing's set-up and loop,
 *  the nominal-size check. Not a trial's comparison (the C++ side's reading of the outputs),
 *  the stress trials, or the checks after timing. */
bool alone_repeats(const std::string& phase) {
  static constexpr std::string_view steps[] = {
      "load_candidate", "load_native", "build_models reference", "build_models candidate",
      "timing_setup",   "timing",      "nominal sizes check"};
  if (std::find(std::begin(steps), std::end(steps), phase) != std::end(steps)) return true;
  return (phase.starts_with("trial nominal ") || phase.starts_with("trial held_out ")) &&
         (phase.ends_with(" reference") || phase.ends_with(" candidate"));
}

/** A problem error the worker reported after the candidate's code could run (its import, a
 *  native library's constructors): that code shares the worker, and could have made the problem
 *  fail (torch state the reference reads, kjudge's harness changed) or written the verdict
 *  itself into the event channel. It stands where the reference alone, in a fresh worker
 *  without the candidate, fails too (its tolerance, the nominal and held-out trials, a Python
 *  candidate's inputs drawn twice, two of the timing's input sets and its runner on them:
 *  k_reference_alone_all); where that runs through and repeats the step the error came from
 *  (alone_repeats), the error is the candidate's; otherwise (no time left, timed out, a step
 *  it does not repeat) it stands, flagged. */
void check_problem_error(const job& j, const runner::spawn_options& so,
                         std::chrono::milliseconds left, const std::string& problem_sha256,
                         const std::string& phase, eval_result& r) {
  const alone_outcome alone =
      left > std::chrono::seconds(1)
          ? reference_alone(j, so, left, std::string(k_reference_alone_all), problem_sha256)
          : alone_outcome{.text = "was not run (no time left)"};
  const std::string reported = r.message.substr(0, r.message.find('\n'));
  if (alone.crashed || alone.failed) {
    r.message += fmt::format(
        "\n(The problem's: the reference alone, in a fresh worker without the candidate's code, "
        "{})",
        alone.failed && alone.verdict == reported ? std::string("failed the same way")
                                                  : alone.text);
  } else if (alone.ran_through && alone_repeats(phase)) {
    r.status = eval_status::runtime_error;
    r.message = fmt::format(
        "the worker reported an error of the problem's after the candidate's code had run "
        "({}), but the reference alone, in a fresh worker without the candidate's code, ran "
        "through the nominal and held-out trials and the timing's inputs: counted as the "
        "candidate's error",
        reported);
    r.add_flag("problem_error_not_reproduced", "error", r.message);
  } else {
    r.add_flag("problem_error_unconfirmed", "warning",
               fmt::format("the problem's error came after the candidate's code had run, and "
                           "the reference alone, in a fresh worker without the candidate's code, "
                           "{}{}: the problem is blamed without that check",
                           alone.text,
                           alone.ran_through ? fmt::format(", which does not repeat the step the "
                                                           "error came from ('{}')",
                                                           phase)
                                             : std::string()));
  }
}

/** Whether a failure's text says that memory ran out (torch's, Python's or the C++ allocator's,
 *  or kjudge's copies that could not be made). */
bool memory_failure(std::string_view text) {
  static constexpr std::string_view signs[] = {"out of memory",
                                               "OutOfMemoryError",
                                               "MemoryError",
                                               "can't allocate memory",
                                               "Cannot allocate memory",
                                               "could not be allocated",
                                               "could not be copied",
                                               "bad_alloc"};
  return std::any_of(std::begin(signs), std::end(signs),
                     [&](std::string_view s) { return text.find(s) != std::string_view::npos; });
}

/** A stress trial the worker skipped because the problem failed on its sizes (run_trials): the
 *  candidate's code had run in that worker by then, and could have made the reference fail there
 *  (an exception raised into its forward from a thread: a candidate hard-coded to the nominal
 *  shape had its stress trials skipped and read correct). The skip stands where the reference
 *  alone, in a fresh worker without the candidate's code, fails in that trial's step too; where
 *  it runs the step through, the failure is the candidate's, unless memory ran out (the worker
 *  held the candidate's memory as well, the fresh one none of it: the skip stands, flagged);
 *  otherwise (no time left, timed out, a failure in another step) the skip stands, flagged.
 *  Skips decided before any stress trial ran (the inputs' estimated size) are not checked. */
void check_stress_skip(const job& j, const runner::spawn_options& so,
                       std::chrono::milliseconds left, const std::string& problem_sha256,
                       eval_result& r) {
  // The first stress trial skipped by a failure (the later ones are sent k_trial_not_run; so are
  // all of them where their inputs were judged too large before any ran).
  const auto skipped = std::find_if(r.trials.begin(), r.trials.end(), [](const trial_result& t) {
    return t.kind == "stress" && t.skipped && !t.error.starts_with(k_trial_not_run);
  });
  if (skipped == r.trials.end()) return;
  const std::string phase = trial_reference_phase("stress", skipped->index);
  const alone_outcome alone = left > std::chrono::seconds(1)
                                  ? reference_alone(j, so, left, phase, problem_sha256)
                                  : alone_outcome{.text = "was not run (no time left)"};
  const std::string failure = skipped->error.substr(0, skipped->error.find('\n'));
  const int number = skipped->index + 1;
  const auto unconfirmed = [&](const std::string& why) {
    r.add_flag("stress_skip_unconfirmed", "warning",
               fmt::format("stress trial {} failed in the problem's part after the candidate's "
                           "code had run ({}), and the reference alone, in a fresh worker without "
                           "the candidate's code, {}: the stress trials stay skipped, "
                           "unconfirmed",
                           number, failure, why));
  };
  if (alone.crashed || (alone.failed && alone.last_phase == phase)) {
    for (auto& f : r.flags)
      if (f.code == "stress_not_applicable")
        f.message += fmt::format(
            " (the reference alone, in a fresh worker without the candidate's code, {} there "
            "too)",
            alone.crashed ? "crashed" : "failed");
    return;
  }
  if (alone.failed)
    return unconfirmed(
        fmt::format("failed in another step ('{}'): {}", alone.last_phase, alone.verdict));
  if (!alone.ran_through) return unconfirmed(alone.text);
  if (memory_failure(skipped->error))
    return unconfirmed(
        "ran that trial, but the failure was memory running out, and the worker held the "
        "candidate's memory as well");
  r.status = eval_status::runtime_error;
  r.message = fmt::format(
      "stress trial {} failed in the problem's part ({}) after the candidate's code had run, "
      "which would have skipped the stress trials; the reference alone, in a fresh worker "
      "without the candidate's code, ran that trial: counted as the candidate's error{}",
      number, failure, r.timing ? " (its timing is not reported)" : "");
  r.timing.reset();
  // Not skipped after all: the stress trials are the candidate's failure, and the skip's flag
  // (the problem cannot run at those sizes) is not so.
  for (auto& t : r.trials)
    if (t.kind == "stress") t.skipped = false;
  std::erase_if(r.flags, [](const flag& f) { return f.code == "stress_not_applicable"; });
  r.add_flag("problem_error_not_reproduced", "error", r.message);
  summarize_correctness(r);
}

}  // namespace

eval_result evaluate(const job& j, const run_options& options) {
  const auto start = std::chrono::steady_clock::now();
  eval_result r;
  r.kjudge_version = KJ_VERSION;
  r.problem = {j.problem.string(), hash_or_empty(j.problem), "kernelbench"};
  r.candidate = {j.candidate.string(), hash_or_empty(j.candidate), to_string(j.kind)};
  r.options = to_json(j);
  r.options.erase("held_out_seed");          // revealed in provenance once the run is over
  r.options.erase("timing_key");             // never shown: nothing needs it after the run
  r.options.erase("reference_alone_until");  // the worker's mode for a check, not an option
  r.options.erase("problem_sha256");         // in problem.sha256
  r.options.erase("orchestrator_pid");       // the worker's fence's, not an option
  r.options.erase("schema");
  r.prov.kjudge_version = KJ_VERSION;
  r.prov.kjudge_commit = source_commit();
  r.prov.hostname = runner::host_name();
  r.prov.started_at = utc_now();
  r.prov.device = j.device;
  r.prov.base_seed = j.base_seed;
  for (int i = 0; i < j.trials; ++i) r.prov.trial_seeds.push_back(trial_seed(j.base_seed, i));
  r.prov.held_out_seed = j.held_out_seed;
  r.prov.timing_preset = j.timing_preset_name;

  runner::spawn_options so;
  const fs::path exe =
      options.worker_executable.empty() ? runner::self_executable() : options.worker_executable;
  so.argv = options.wrapper;
  so.argv.push_back(exe.string());
  so.argv.push_back("worker");
  so.channel_fd = channel_fd;
  so.echo_output = options.echo_output;
  so.output_tail_bytes = 64 * 1024;
  // Where load_inline builds go, in the environment from the start (the worker never sets it):
  // a folder per candidate file (bytes and real path), problem and interpreter. torch builds an
  // extension in a folder
  // named only by the name given to load_inline, writing the sources there before it takes its
  // lock, and without its own per-Python subfolder once this variable is set: two candidates
  // that use one name, evaluated at once, or under two interpreters, would build each other's.
  const fs::path extensions = torch_extensions_dir(j);
  so.env.emplace_back("TORCH_EXTENSIONS_DIR", extensions.string());
  // torch.compile's Inductor compiles in the worker's own thread, not in a pool of compile worker
  // processes, unless the caller's environment says otherwise: that pool starts in the
  // background and imports torch, seconds of CPU beside the timing (on an H100 machine it kept
  // a torch.compile softmax's wait before the timing busy for its whole 5 s). Compiling in
  // process changes when the kernels are built (in the first trial), not what they compute.
  if (std::getenv("TORCHINDUCTOR_COMPILE_THREADS") == nullptr)
    so.env.emplace_back("TORCHINDUCTOR_COMPILE_THREADS", "1");
  // Made here, so that a cache folder that cannot be had (a file in its path, no permission) is
  // known as kjudge's environment's failure: a candidate whose import then fails (its load_inline
  // the first to find out) is not given a compile error for it. One that builds nothing runs.
  std::string unusable_cache;
  // A library of an earlier build that was cut short (torch would load it again, and die of
  // SIGBUS, on every import) is removed, so that torch builds it again.
  std::vector<compile::removed_library> damaged;
  // Build locks made from here on may be this worker's (remove_abandoned_build_locks).
  const auto worker_start = fs::file_time_type::clock::now();
  if (j.kind == candidate_kind::python) {
    std::error_code ec;
    // Marked used before the worker starts: a prune of the cache leaves it alone from then on
    // (compile/cache.hpp). One that moved it aside just before is why it is made a second time.
    for (int attempt = 0; attempt < 2; ++attempt) {
      fs::create_directories(extensions, ec);
      compile::mark_used(extensions);
      if (!ec && fs::is_directory(extensions)) break;
    }
    if (ec || !fs::is_directory(extensions))
      unusable_cache = fmt::format("{}: {}", extensions.string(),
                                   ec ? ec.message() : std::string("not a directory"));
    else
      damaged = compile::remove_damaged_libraries(extensions);
  }
  const bool pool =
      options.use_pool && options.wrapper.empty() && options.worker_executable.empty();
  const std::string address = pool ? pool_address(exe, j.python) : "";
  std::optional<runner::process_result> pooled;
  bool pool_started = false;
  // --timeout covers the whole evaluation: the wait for a starting pool too.
  const auto deadline = start + options.timeout;
  const auto time_left = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  // The worker's limit and job as the worker starts: what is left of the limit (the worker sizes
  // its wait for the GPU's lock by it).
  // The problem bytes every worker of this evaluation loads: the caller's hash (--processes:
  // process 1's), else as read now. A later process's worker then refuses a problem rewritten
  // since process 1 instead of running it, and the reference-alone check runs what the crashed
  // worker ran.
  const std::string problem_sha256 = j.problem_sha256.empty() ? r.problem.sha256 : j.problem_sha256;
  const auto limit_worker = [&] {
    so.timeout = time_left();
    job left = j;
    left.problem_sha256 = problem_sha256;
    left.orchestrator_pid = static_cast<int>(::getpid());
    if (left.timeout_s > 0)
      left.timeout_s = std::min(left.timeout_s, std::chrono::duration<double>(so.timeout).count());
    so.stdin_data = to_json(left).dump();
  };
  // The kernel's out-of-memory kills so far: a worker that ends by a SIGKILL of no one's in
  // kjudge was, where this count moved meanwhile, most likely one of them.
  const auto oom_kills_before = runner::oom_kills();
  if (pool) {
    // A pool still importing torch is waited for: it is further along than a worker exec'd now.
    const auto w = runner::wait_for_pool(address, std::min(options.pool_start_wait, time_left()));
    r.worker.pool_wait_s = w.waited.count();
    limit_worker();
    pooled = runner::run_process_in_pool(address, so, &r.worker.pool_refused);
    if (!pooled && w.state == runner::pool_state::starting)
      r.worker.pool_refused = "the pool there was still starting";
    else if (!pooled && w.state == runner::pool_state::foreign)
      r.worker.pool_refused = "another user's process holds the pool's address";
    // None there (or the one there went away before it took the request): one is started now,
    // so that it imports torch while this evaluation's own worker does, and serves the next
    // evaluation (which waits for it if it must). Where a pool is there after all, the new one
    // cannot claim the address and exits at once.
    if (!pooled &&
        (w.state == runner::pool_state::absent || w.state == runner::pool_state::accepting))
      pool_started =
          start_pool(exe, address, j.python, options.pool_idle_exit,
                     j.cache_dir / "worker-pool.log", options.max_pools, r.worker.pool_not_started);
  }
  if (!pooled) limit_worker();
  // Moved, not copied, as are its lines: the channel may hold up to its cap of a candidate's
  // writes.
  const runner::process_result p = pooled ? std::move(*pooled) : runner::run_process(so);
  // Read at once (the reference-alone run below may be killed too), for a SIGKILL only.
  std::uint64_t oom_kills_meanwhile = 0;
  if (p.how == runner::exit_kind::signaled && p.signal == SIGKILL && oom_kills_before)
    if (const auto after = runner::oom_kills(); after && *after > *oom_kills_before)
      oom_kills_meanwhile = *after - *oom_kills_before;
  r.worker.started_by = pooled ? "pool" : (pool_started ? "exec+pool_started" : "exec");

  fold_state state;
  fold_channel(p.channel, r, state);

  r.worker.outcome = p.describe();
  r.worker.exit_code = p.exit_code;
  r.worker.signal = p.signal;
  r.worker.wall_s = p.wall.count();
  r.worker.max_rss_kb = p.max_rss_kb;
  r.worker.last_phase = state.last_phase;
  // Ended while it waited for the GPU's lock: the wait lasted from that phase's start to the end.
  const bool ended_waiting_for_gpu = !state.final_seen && !state.gpu_lock_seen &&
                                     state.last_phase == "wait_gpu_lock" &&
                                     !r.worker.phases.empty();
  const auto since_last_phase = [&] {
    return std::max(0.0, p.wall.count() - r.worker.phases.back().start_s);
  };
  if (ended_waiting_for_gpu) r.worker.gpu_lock_wait_s = since_last_phase();
  // So for the CPU's lock (sent once its wait is over, cpu_lock).
  if (!state.final_seen && state.last_phase == "wait_cpu_lock" && !r.worker.phases.empty() &&
      r.worker.cpu_lock_wait_s == 0)
    r.worker.cpu_lock_wait_s = since_last_phase();
  r.worker.output_tail = runner::last_lines(p.output_tail, 40);

  if (!state.final_seen) {
    const std::string during =
        state.last_phase.empty() ? "" : fmt::format(" during '{}'", state.last_phase);
    if (p.how == runner::exit_kind::spawn_failed) {
      r.status = eval_status::internal_error;
      r.message = "the worker could not be started: " + p.error;
    } else if (p.how == runner::exit_kind::lost) {
      r.status = eval_status::internal_error;  // the pool's failure, not the candidate's
      r.message = fmt::format("the worker {}{}", p.describe(), during);
    } else if (p.how == runner::exit_kind::timed_out) {
      r.status = eval_status::timed_out;
      // The phase belongs to the timeout; what the pool failed to report after it comes last.
      r.message = fmt::format(
          "evaluation timed out after {}{}{}{}",
          seconds_text(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()),
          during,
          ended_waiting_for_gpu ? fmt::format(" ({} of it waiting for other evaluations' "
                                              "work on the GPU to end)",
                                              seconds_text(r.worker.gpu_lock_wait_s))
                                : std::string(),
          p.error.empty() ? std::string() : "; " + p.error);
    } else {
      // In a reference phase before any candidate forward the crash is the problem's; after
      // one, the candidate's code (a thread it left, memory it corrupted) may have caused it.
      const bool in_reference = reference_phase(state.last_phase);
      r.status = in_reference && !state.candidate_forward_seen ? eval_status::problem_error
                                                               : eval_status::crashed;
      r.message = fmt::format("the worker {}{}", worker_ending(p), during);
      // Two crashes are the candidate's unless the reference crashes as well on its own, run
      // alone in a fresh worker (no candidate loaded): one in a trial's reference part after a
      // candidate's forward (the reference alone runs through the same trials up to the same
      // part; a problem whose forward calls os._exit() was every candidate's crash), and one in a
      // step where both sides run on the timing's input sets, their set-up, the nominal-size
      // check or the timed loop (the reference alone, k_reference_alone_all, sets up two of
      // those sets, the nominal sizes among them, and runs its runner on each; a forward that
      // exits at its nominal size only, which the trials jitter away from, was every
      // candidate's crash), unless an out-of-memory kill came meanwhile (the machine's memory,
      // not the problem, may end the reference alone as well).
      const bool trial_part = in_reference && state.candidate_forward_seen;
      const bool both_sides_step =
          r.status == eval_status::crashed && oom_kills_meanwhile == 0 &&
          (state.last_phase == "timing_setup" || state.last_phase == "timing" ||
           state.last_phase == "nominal sizes check");
      if (trial_part || both_sides_step) {
        const bool runnable = (both_sides_step || state.last_phase.starts_with("trial ")) &&
                              time_left() > std::chrono::seconds(1);
        const alone_outcome alone =
            runnable ? reference_alone(
                           j, so, time_left(),
                           trial_part ? state.last_phase : std::string(k_reference_alone_all),
                           problem_sha256)
                     : alone_outcome{.text = "was not run (no time left, or not in a trial)"};
        const char* where =
            trial_part
                ? "the reference's part of a trial, after the candidate's code had run a forward"
                : "a step where both sides run, on the timing's input sets";
        if (alone.crashed) {
          r.status = eval_status::problem_error;
          r.message += fmt::format(
              " ({}; run alone in a fresh worker without the candidate, the reference crashed "
              "there too ({}): the problem's)",
              where, alone.text);
        } else {
          r.message += fmt::format(
              " ({}: counted as the candidate's crash; the reference alone, in a fresh worker "
              "without the candidate, {})",
              where, alone.text);
        }
      }
      // The kernel's out-of-memory killer sends SIGKILL and says so only in its log: a worker
      // that the machine's memory could not hold read as a plain crash (a problem's 6.4 GB
      // input, with the worker at 23 GB of the machine's 24).
      if (oom_kills_meanwhile > 0)
        r.message += fmt::format(
            "; the kernel's out-of-memory killer ended {} meanwhile (oom_kill in /proc/vmstat), "
            "and the worker's peak resident memory was {} (the machine has {}; a container's or "
            "cgroup's limit may be lower): it most likely ran out of memory",
            oom_kills_meanwhile == 1 ? std::string("a process")
                                     : fmt::format("{} processes", oom_kills_meanwhile),
            compile::size_text(static_cast<std::uintmax_t>(p.max_rss_kb) * 1024U),
            compile::size_text(machine_memory_bytes()));
      // A bus error while a Python candidate is imported is how loading an extension library
      // cut short in the build cache ends (a disk that filled, a copy interrupted): torch's
      // build sees it up to date and loads it again every time.
      std::error_code ec;
      if (j.kind == candidate_kind::python && state.last_phase == "load_candidate" &&
          p.how == runner::exit_kind::signaled && p.signal == SIGBUS &&
          !fs::is_empty(extensions, ec) && !ec)
        r.message += fmt::format(
            "; a library in its load_inline build folder ({}) that was cut short ends so: "
            "delete the folder to build it again",
            extensions.string());
    }
  }
  // (Only an import whose error names the cache: a syntax error stays the candidate's.)
  const auto names_cache = [&](const std::string& text) {
    return text.find(j.cache_dir.string()) != std::string::npos;
  };
  if (r.status == eval_status::compile_error && !unusable_cache.empty() &&
      (names_cache(r.build.log) || names_cache(r.message))) {
    r.status = eval_status::internal_error;
    r.message = fmt::format(
        "the candidate's import failed where its build folder could not be made ({}): an "
        "extension it builds has nowhere to go, which is the cache directory's fault, not the "
        "candidate's; the import's error: {}",
        unusable_cache, r.message);
  }
  // A Python candidate's failed import (a load_inline build): the exception carries the
  // compiler's output, unless the build was verbose, which sends it to the worker's output
  // instead; what the worker printed comes with the build's log, so the compiler's diagnostics
  // are in the report and the result either way.
  if (r.status == eval_status::compile_error && j.kind == candidate_kind::python &&
      !p.output_tail.empty()) {
    if (!r.build.log.empty() && r.build.log.back() != '\n') r.build.log += '\n';
    r.build.log += fmt::format(
        "[kjudge: the worker's output{}, where a verbose load_inline build prints the "
        "compiler's:]\n{}",
        p.output_bytes > p.output_tail.size()
            ? fmt::format(" (its last {} KiB of {} KiB)", p.output_tail.size() >> 10,
                          p.output_bytes >> 10)
            : std::string(),
        p.output_tail);
  }
  // A worker that ended in the candidate's import without its verdict (timed out in a long
  // load_inline build, killed, crashed) may have left torch's build lock behind.
  if (j.kind == candidate_kind::python && !state.final_seen && state.last_phase == "load_candidate")
    for (const auto& lock : compile::remove_abandoned_build_locks(extensions, worker_start))
      r.add_flag("stale_build_lock_removed", "warning",
                 fmt::format("{} was removed: the lock of a load_inline build that the worker "
                             "did not finish (it ended during the candidate's import); older "
                             "torch would have waited on it in every later evaluation",
                             lock.string()));
  for (const auto& d : damaged)
    r.add_flag("damaged_build_removed", "warning",
               fmt::format("{} was removed before the candidate's import, for its build to "
                           "make again: a library cut short by an earlier build ({}) would have "
                           "crashed the import",
                           d.path.string(), d.why));
  if (p.leftovers_killed > 0)
    r.add_flag("leftover_processes", "warning",
               fmt::format("{} process(es) the worker left behind outside its process group "
                           "(started with setsid, say) were still running when it ended, and "
                           "were killed",
                           p.leftovers_killed));
  if (p.channel_overflow)
    r.add_flag("event_channel_overflow", "error",
               fmt::format("the worker's event channel carried more than {} MiB; the rest was "
                           "dropped (only a candidate writing into it sends that much)",
                           so.channel_limit_bytes >> 20));
  if (state.flags_dropped > 0)
    r.add_flag("flags_dropped", "error",
               fmt::format("{} more distinct flags came on the worker's event channel than the "
                           "{} a result takes, and were dropped (only a candidate writing into "
                           "the channel sends that many)",
                           state.flags_dropped, k_max_event_flags));
  if (state.events_dropped > 0)
    r.add_flag("event_flood", "error",
               fmt::format("{} phase or trial events beyond the {} phases and {} trials a result "
                           "takes came on the worker's event channel, and were dropped (only a "
                           "candidate writing into the channel sends that many)",
                           state.events_dropped, k_max_event_phases, k_max_event_trials));
  // Which of two timing (or launch) events was the worker's cannot be told: neither is shown.
  for (const auto& key : state.repeated_events) {
    if (key == "timing") r.timing.reset();
    if (key == "launches") r.launches = nullptr;
  }
  if (state.malformed_lines > 0)
    r.add_flag(
        "malformed_events", "warning",
        fmt::format("{} malformed line(s) on the worker's event channel", state.malformed_lines));
  if (state.final_seen && r.status == eval_status::problem_error && state.candidate_code_seen)
    check_problem_error(j, so, time_left(), problem_sha256, state.last_phase, r);
  summarize_correctness(r);
  if (state.final_seen) check_verdict(j, p, state, r);
  if (state.final_seen && r.status == eval_status::correct && state.candidate_code_seen && j.stress)
    check_stress_skip(j, so, time_left(), problem_sha256, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace kj::eval
