#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include <kjudge/compile/nvcc.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/result.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/eval/combine.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/orchestrator.hpp>
#include <kjudge/eval/profile_job.hpp>
#include <kjudge/profile/report.hpp>
#include <kjudge/python/interpreter.hpp>
#include <kjudge/report/json_printer.hpp>
#include <kjudge/report/terminal_printer.hpp>
#include <kjudge/runner/process.hpp>

#include "commands.hpp"

namespace kj::app {

namespace fs = std::filesystem;

namespace {

/** A finite number in [min, max] (`min` itself excluded when `open_min`). CLI11's number checks
 *  let NaN through (every comparison with it is false), and a huge --timeout overflowed its
 *  conversion to milliseconds. */
CLI::Validator finite_in(double min, double max, bool open_min) {
  const std::string range = fmt::format("{}{}, {}]", open_min ? "(" : "[", min, max);
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc::result_out_of_range && ptr == end)
          return fmt::format(
              "{} is beyond what a double holds (it underflows or overflows): "
              "give a number in {}",
              text, range);
        const bool above_min = open_min ? v > min : v >= min;
        if (ec != std::errc() || ptr != end || !std::isfinite(v) || !above_min || v > max)
          return fmt::format("{} is not a number in {}", text, range);
        return {};
      },
      "", "finite_in");  // no description: CLI11 would print it after the type, "FLOAT:..."
}

/** The options `eval` and `profile` share. */
void add_shared_options(CLI::App* cmd, eval_args& a) {
  cmd->set_help_flag();  // help comes from docs/cli.md (main.cpp)
  cmd->add_option("problem", a.problem)->required();
  cmd->add_option("candidate", a.candidate)->required();
  cmd->add_option("--device", a.device)->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option("--trials", a.trials)->transform(decimal_in(1, 100));
  // Any 64-bit seed: CLI11 alone reads "-1" as 2^64 - 1 and saturates a larger number to it,
  // so that two different seeds would run the same trials.
  cmd->add_option("--seed", a.seed)
      ->transform(decimal_in(0, std::numeric_limits<std::uint64_t>::max()));
  cmd->add_option("--shapes", a.shapes)->check(CLI::IsMember({"nominal", "stress"}));
  cmd->add_option("--atol", a.atol)->check(finite_in(0, 1e30, false));
  cmd->add_option("--rtol", a.rtol)->check(finite_in(0, 1e30, false));
  cmd->add_option("--json", a.json_path)->check(not_empty_path());
  cmd->add_flag("--precise", a.precise);
  cmd->add_option("--budget", a.budget_s)->check(finite_in(0, 86'400, true));
  cmd->add_option("--target-rse", a.target_rse_pct)->check(finite_in(0, 100, true));
  cmd->add_option("--min-samples", a.min_samples)->transform(decimal_in(10, 100000));
  cmd->add_option("--sets", a.sets)->transform(decimal_in(2, eval::max_input_sets));
  cmd->add_option("--processes", a.processes)->transform(decimal_in(1, 16));
  cmd->add_flag("--warm", a.warm);
  auto* graph = cmd->add_flag("--graph", a.graph)->disable_flag_override();
  cmd->add_flag("--no-graph", a.no_graph)->excludes(graph)->disable_flag_override();
  cmd->add_flag("--no-timing", a.no_timing);
  cmd->add_option("--timeout", a.timeout_s)->check(finite_in(0, 1e6, true));
  cmd->add_option("--python", a.python)->check(not_empty_path("a python3"));
  cmd->add_option("--cache-dir", a.cache_dir)->check(not_empty_path("a folder"));
  cmd->add_option("--nvcc-flag", a.nvcc_flags)->allow_extra_args(false);
  cmd->add_flag("-v,--verbose", a.verbose);
  auto* quiet = cmd->add_flag("-q,--quiet", a.quiet);
  auto* pool = cmd->add_flag("--pool", a.pool);
  cmd->add_flag("--no-pool", a.no_pool)->excludes(pool);
  cmd->add_option("--baseline", a.baseline_path)->check(not_empty_path("a kjudge result file"));
  cmd->add_flag("--summary", a.summary_only)->excludes(quiet);  // -q would print nothing
  cmd->add_flag("--no-counters", a.no_counters);
  cmd->add_option("--ncu", a.ncu_path)->check(not_empty_path("an ncu executable"));
  cmd->add_option("--ncu-cache-control", a.ncu_cache_control)
      ->check(CLI::IsMember({"all", "none"}));
}

}  // namespace

CLI::Validator decimal_in(std::uint64_t min, std::uint64_t max) {
  const std::string range = fmt::format("{} to {}", min, max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        // from_chars takes decimal digits only: no sign, no space, no 0x, no exponent.
        if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max)
          return fmt::format("{} is not an integer from {}", text, range);
        text = std::to_string(v);  // "010" is ten: CLI11 would read a leading 0 as octal
        return {};
      },
      "", "decimal_in");  // no description, as finite_in()
}

int write_json_last(const std::string& path, const std::string& document, const char* command,
                    const std::string& ended, const output_target* seen) {
  if (path.empty()) return 0;
  std::string moved;  // where the path leads now, if not where it did
  if (seen != nullptr && path != "-" && seen->how != output_target::kind::descriptor) {
    try {
      const output_target now = resolve_output(path);
      if (now.how != seen->how || now.path != seen->path) moved = now.path.string();
    } catch (const kj::error& e) {
      moved = e.message();
    }
  }
  try {
    if (moved.empty()) {
      write_output(path, document);
    } else {
      replace_file(path, document);
      std::fflush(stdout);
      std::fprintf(stderr,
                   "kjudge %s: warning: --json %s led to %s when the evaluation began and to %s "
                   "now (changed meanwhile: the candidate's code can reach it); the result "
                   "replaced what was at %s instead\n",
                   command, terminal_safe_line(path).c_str(),
                   terminal_safe_line(seen->path.string()).c_str(),
                   terminal_safe_line(moved).c_str(), terminal_safe_line(path).c_str());
    }
  } catch (const kj::error& e) {
    std::string removed;
    if (!moved.empty()) {
      std::error_code ec;
      removed = fs::remove(path, ec) ? "; what was at it, not kjudge's, was removed"
                                     : fmt::format(
                                           "; what is at it is not kjudge's, and could "
                                           "not be removed: {}",
                                           ec ? ec.message() : std::string("gone"));
    }
    std::fflush(stdout);
    std::fprintf(stderr, "kjudge %s: error: the result was NOT written to --json %s: %s%s%s\n",
                 command, terminal_safe_line(path).c_str(), terminal_safe(e.message()).c_str(),
                 removed.c_str(), ended.c_str());
    return exit_code::result_not_written;
  }
  return 0;
}

/** An empty path names nothing (`--json ''` wrote nothing and said nothing; `--python ''` and
 *  `--cache-dir ''` fell back to the defaults as if not given): `what` says what to name. A path
 *  that starts with '-' (other than "-" alone) is an option whose value was left out: `--json
 *  --quiet` wrote the result to a file called "--quiet", and did not print quietly. */
CLI::Validator not_empty_path(const char* what) {
  return CLI::Validator(
      [what](const std::string& text) -> std::string {
        if (text.empty())
          return fmt::format("an empty path: name {}",
                             what == nullptr ? "a file, or - for standard output" : what);
        if (text == "-" && what != nullptr)
          return fmt::format(
              "-: name {} (only --json takes - for standard output; a file "
              "called - is named ./-)",
              what);
        if (text.size() > 1 && text.front() == '-')
          return fmt::format(
              "{} looks like an option, not a path (was this option's value left out?); a file "
              "whose name starts with '-' is named ./{}",
              text, text);
        return {};
      },
      "PATH", "not_empty_path");
}

CLI::Validator not_empty(const char* what) {
  return CLI::Validator(
      [what](const std::string& text) -> std::string {
        return text.empty() ? fmt::format("an empty value: give {}", what) : std::string();
      },
      "", "not_empty");
}

std::string span_text(double seconds) {
  const auto s = std::max<long long>(0, static_cast<long long>(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

/** Fails early (usage) when --json cannot be written, rather than after the evaluation. The
 *  file checked is the one written: a symbolic link's target (write_file_atomic). */
output_target check_json_path(const std::string& path) {
  if (path.empty() || path == "-") return {};
  std::error_code ec;
  if (fs::is_directory(path, ec))
    KJ_THROW(error_kind::usage, "--json {}: is a directory (name a file in it)", path);
  output_target target;
  try {
    target = resolve_output(path);
  } catch (const kj::error& e) {
    KJ_THROW(error_kind::usage, "--json: {}", e.message());
  }
  if (target.how == output_target::kind::descriptor) return target;  // open for writing: checked
  if (target.how == output_target::kind::direct) {
    if (::access(target.path.c_str(), W_OK) != 0)
      KJ_THROW(error_kind::usage, "--json {}: cannot write to {}", path, target.path.string());
    return target;
  }
  const fs::path dir = fs::absolute(target.path).parent_path();
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
    KJ_THROW(error_kind::usage, "--json {}: cannot write into {}", path, dir.string());
  // access() answers for permissions alone: root is let into folders no file can be made in
  // (/proc), and the result was lost after the whole evaluation. The file is written beside its
  // name and renamed into place (write_file_atomic): a file made and removed there says so.
  const fs::path probe =
      dir / fmt::format(".{}.kjudge-probe-{}", target.path.filename().string(), ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST)
    KJ_THROW(error_kind::usage, "--json {}: cannot create a file in {}: {}", path, dir.string(),
             std::strerror(errno));
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  return target;
}

CLI::App* add_eval_command(CLI::App& app, eval_args& a) {
  auto* cmd = app.add_subcommand("eval", "judge a candidate against a problem");
  add_shared_options(cmd, a);
  cmd->add_flag("--profile", a.profile);
  // Given at all, not only away from their defaults: `--ncu-cache-control all` without
  // --profile is as much a mistake as `none`.
  cmd->parse_complete_callback([cmd, &a] {
    for (const char* name :
         {"--baseline", "--summary", "--no-counters", "--ncu", "--ncu-cache-control"})
      if (cmd->count(name) > 0) a.profile_options_given = true;
  });
  return cmd;
}

CLI::App* add_profile_command(CLI::App& app, eval_args& a) {
  auto* cmd = app.add_subcommand("profile", "counters for reference and candidate, side by side");
  add_shared_options(cmd, a);
  return cmd;
}

namespace {

eval::job make_job(const eval_args& a) {
  eval::job j;
  for (const auto& [what, p] :
       {std::pair{"problem", a.problem}, std::pair{"candidate", a.candidate}}) {
    const std::string shown = terminal_safe_line(p);  // a name with a newline, an escape
    std::error_code ec;
    const auto st = fs::status(p, ec);
    // A folder on the way that may not be searched: not "no such file".
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      KJ_THROW(error_kind::usage, "{} {}: cannot be read: {}", what, shown, ec.message());
    if (fs::is_regular_file(st)) {
      if (::access(p.c_str(), R_OK) != 0)
        KJ_THROW(error_kind::usage, "{} {}: cannot be read: {}", what, shown, std::strerror(errno));
      continue;
    }
    if (fs::is_directory(st))
      KJ_THROW(error_kind::usage, "{} {}: is a directory, not a file", what, shown);
    if (fs::exists(st)) KJ_THROW(error_kind::usage, "{} {}: not a regular file", what, shown);
    KJ_THROW(error_kind::usage, "{} {}: no such file", what, shown);
  }
  if (fs::path(a.problem).extension() != ".py")
    KJ_THROW(error_kind::usage,
             "problem {}: expected a Python file (.py) defining Model, get_inputs and "
             "get_init_inputs (KernelBench format)",
             a.problem);
  j.problem = fs::absolute(a.problem);
  j.candidate = fs::absolute(a.candidate);
  j.kind = eval::candidate_kind_for(j.candidate);
  j.device = a.device == "auto" ? (eval::nvidia_driver_present() ? "cuda" : "cpu") : a.device;
  if (j.kind == eval::candidate_kind::native && j.device != "cuda")
    KJ_THROW(error_kind::usage,
             "{} is a native CUDA candidate and needs a GPU (--device cuda); this run is on the "
             "CPU{}. Use a Python candidate for --device cpu.",
             a.candidate,
             a.device == "auto" ? " (--device auto found no NVIDIA driver on this machine)" : "");
  // The interpreter check is part of the evaluation's time: within --timeout as well.
  j.python =
      python::choose_interpreter(a.python, std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::duration<double>(a.timeout_s)))
          .executable;
  j.cache_dir = a.cache_dir.empty() ? compile::default_cache_dir() : fs::path(a.cache_dir);
  // nvcc takes these paths through a shell: refused here, before a worker starts, rather than
  // failing (or running what a folder's name says) in the build.
  if (j.kind == eval::candidate_kind::native)
    for (const auto& [what, path] :
         {std::pair{"candidate", j.candidate},
          std::pair{"build cache", fs::absolute(j.cache_dir) / "native"}})
      if (std::string why = compile::shell_hazard(path); !why.empty())
        KJ_THROW(error_kind::usage, "{}: {}", what, why);
  if (j.kind == eval::candidate_kind::native)
    if (std::string why = compile::source_name_hazard(j.candidate); !why.empty())
      KJ_THROW(error_kind::usage, "candidate: {}", why);
  j.include_dir = fs::path(KJ_SOURCE_DIR) / "include";
  j.trials = a.trials;
  j.base_seed = a.seed;
  j.held_out_seed = eval::held_out_seed(eval::fresh_secret(), a.seed);
  j.timing_key = eval::fresh_secret();
  j.stress = a.shapes == "stress";
  j.atol = a.atol;
  j.rtol = a.rtol;
  j.timing = !a.no_timing;
  j.timing_preset_name = a.precise ? "precise" : "agent";
  j.timing_options = eval::timing_preset(j.timing_preset_name);
  if (a.budget_s) {
    // A preset's least sampling time keeps its share of the budget where the budget is cut
    // (precise: 1 s of 10 s); at 1 s it would keep the noise target of a budget under 1 s from
    // ever being met, every run spending its budget.
    auto& o = j.timing_options;
    const seconds preset_budget = o.budget_per_side;
    o.budget_per_side = seconds(*a.budget_s);
    if (o.budget_per_side < preset_budget)
      o.min_time = o.min_time * (o.budget_per_side / preset_budget);
  }
  if (a.target_rse_pct) j.timing_options.target_rse_pct = *a.target_rse_pct;
  if (a.min_samples) j.timing_options.min_samples = *a.min_samples;
  if (a.sets) j.timing_options.max_input_sets = *a.sets;
  j.timing_options.cold = !a.warm;
  j.timing_options.graph_replay = !a.no_graph;  // --graph (the default) only excludes --no-graph
  j.timing_options.gpu = j.device == "cuda";
  j.nvcc_flags = a.nvcc_flags;
  // A third of the evaluation's limit at most waiting for the GPU, so that its own timing, which
  // the limit covers too, still has room.
  j.gpu_lock_wait_s = a.timeout_s / 3;
  j.timeout_s = a.timeout_s;
  return j;
}

/** The job travels to the worker as JSON, which holds only UTF-8 text: a path or flag that is
 *  not is refused here (it was an internal error, with no result written). */
void check_utf8(std::string_view what, const std::string& value) {
  try {
    (void)nlohmann::json(value).dump();
  } catch (const nlohmann::json::type_error&) {
    KJ_THROW(error_kind::usage,
             "{}: not valid UTF-8 (kjudge passes it to its worker as JSON text); rename it", what);
  }
}

/** Refuses a baseline taken of another problem than `problem`: an eval result names its
 *  problem's SHA-256 (`sha256`, compared with the file's), a bare profile only its path (its file
 *  name compared: the same problem may have been evaluated from another folder). */
void check_baseline_problem(const std::string& path, const std::string& sha256,
                            const std::string& baseline_problem, const std::string& problem) {
  const auto refuse = [&](const std::string& why) {
    KJ_THROW(error_kind::usage,
             "--baseline {}: a result of another problem ({}; this one is {}): deltas would "
             "compare two different functions",
             path, why, problem);
  };
  if (!sha256.empty()) {
    std::string now;
    try {
      now = sha256_file(problem);
    } catch (const kj::error&) {
      return;  // an unreadable problem is reported by the evaluation itself
    }
    if (sha256 != now) refuse(fmt::format("{}, SHA-256 {}", baseline_problem, sha256));
  } else if (fs::path(baseline_problem).filename() != fs::path(problem).filename()) {
    refuse(baseline_problem);
  }
}

/** A saved profile to compare with: a kjudge.profile/2 (or /1) document, or an eval result holding
 * one, taken of `problem` (check_baseline_problem). */
std::optional<profile::profile_report> read_baseline(const std::string& path,
                                                     const std::string& problem) {
  if (path.empty()) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const kj::error& e) {
    KJ_THROW(error_kind::usage, "--baseline: {}", e.message());
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::usage, "--baseline {}: not JSON ({})", path, e.what());
  }
  std::string sha256;  // an eval result's problem's
  if (j.is_object() && j.value("schema", nlohmann::json{}) == nlohmann::json(eval_schema)) {
    // An eval result holds a profile only when it was taken with one.
    if (!j.contains("profile") || j.at("profile").is_null())
      KJ_THROW(error_kind::usage,
               "--baseline {}: the result holds no profile (take it with kjudge profile or eval "
               "--profile)",
               path);
    if (const auto p = j.find("problem"); p != j.end() && p->is_object())
      sha256 = p->value("sha256", std::string());
    nlohmann::json profile = std::move(j.at("profile"));
    j = std::move(profile);
  }
  std::optional<profile::profile_report> report;
  try {
    report = profile::report_from_json(j);
  } catch (const kj::error& e) {
    // Not a profile (wrong schema, malformed): the user named the wrong file. Other errors stay.
    if (e.kind() != error_kind::protocol) throw;
    KJ_THROW(error_kind::usage, "--baseline {}: {}", path, e.message());
  }
  check_baseline_problem(path, sha256, report->problem, problem);
  return report;
}

/** Why the report could not be written to standard output (a full disk, an I/O error), once it
 *  failed; empty otherwise. A reader that went away (EPIPE: `| head`) is no failure: the
 *  evaluation goes on and writes --json (docs/cli.md). */
std::string g_report_error;

/** The report on standard output, shown rather than acted on by a terminal (terminal_safe): it
 *  carries the candidate's output, messages and names. A failed write is kept for the exit. */
void print(const std::string& report) {
  const std::string text = terminal_safe(report);
  errno = 0;
  const bool wrote = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  const bool flushed = std::fflush(stdout) == 0;
  if ((wrote && flushed) || errno == EPIPE || !g_report_error.empty()) return;
  g_report_error = errno != 0 ? std::strerror(errno) : "the write failed";
  std::clearerr(stdout);
}

/** Exits with result_not_written, saying so on stderr, where the report could not be written to
 *  standard output; `status` is what the evaluation's own exit code would have been. */
int report_written_or(int status, std::string_view ended, const char* command) {
  if (g_report_error.empty()) return status;
  std::fprintf(stderr,
               "kjudge %s: error: the report was NOT written to standard output: %s (the "
               "evaluation ended %.*s, exit code %d; exiting with %d instead)\n",
               command, g_report_error.c_str(), static_cast<int>(ended.size()), ended.data(),
               status, exit_code::result_not_written);
  return exit_code::result_not_written;
}

/** True when a tool injects itself into kjudge's processes (nsys, ncu, compute-sanitizer set
 *  CUDA_INJECTION64_PATH; preloaded libraries come through LD_PRELOAD). A pool started under it
 *  would outlive the tool's session, and workers forked from it would run outside it. */
bool tool_injected() {
  for (const char* name : {"CUDA_INJECTION64_PATH", "LD_PRELOAD"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  return false;
}

/** --pool or --no-pool decide, else KJUDGE_POOL (0 or 1); by default the worker pool, unless a
 *  tool is injected (tool_injected()). */
bool use_pool(const eval_args& a) {
  if (a.pool || a.no_pool) return a.pool;
  const char* env = std::getenv("KJUDGE_POOL");
  if (env == nullptr || *env == '\0') return !tool_injected();
  const std::string_view v(env);
  if (v == "0") return false;
  if (v == "1") return true;
  KJ_THROW(error_kind::usage, "KJUDGE_POOL={}: use 1 (the worker pool, the default) or 0 (none)",
           v);
}

/** KJUDGE_POOL_MAX: how many worker pools of this user may run at once, 1 to 64 (default 4). */
int max_pools() {
  const char* env = std::getenv("KJUDGE_POOL_MAX");
  if (env == nullptr || *env == '\0') return eval::k_default_max_pools;
  std::string text = env;
  if (const std::string bad = decimal_in(1, 64)(text); !bad.empty())
    KJ_THROW(error_kind::usage, "KJUDGE_POOL_MAX={}: {} (pools at once)", env, bad);
  return std::stoi(text);
}

}  // namespace

int run_eval(const eval_args& a) {
  // Ctrl-C, SIGTERM or SIGHUP kill the worker's process group (and what it left outside it) and
  // exit with 128 + the signal; what a worker's descendants leave behind is killed once it ends.
  runner::exit_on_interrupt("kjudge");
  runner::set_orphan_cleanup(true);
  const output_target json_target = check_json_path(a.json_path);
  for (const auto& [what, file] : {std::pair{"problem", &a.problem}, {"candidate", &a.candidate}}) {
    std::error_code ec;
    if (!a.json_path.empty() && a.json_path != "-" && fs::equivalent(a.json_path, *file, ec))
      KJ_THROW(error_kind::usage, "--json {}: is the {} file; the result would overwrite it",
               a.json_path, what);
  }
  check_utf8("the problem's path", a.problem);
  check_utf8("the candidate's path", a.candidate);
  check_utf8("--python", a.python);
  for (const auto& flag : a.nvcc_flags) {
    check_utf8("--nvcc-flag", flag);
    if (std::string why = compile::refused_flag(flag); !why.empty())
      KJ_THROW(error_kind::usage, "--nvcc-flag {}", why);
  }
  if (!a.profile && a.profile_options_given)
    KJ_THROW(error_kind::usage,
             "--baseline, --summary, --no-counters, --ncu and --ncu-cache-control apply to a "
             "profile: add --profile (or use kjudge profile)");
  if (a.processes > 1 && a.no_timing)
    KJ_THROW(error_kind::usage,
             "--processes pools the timing of several processes: not with "
             "--no-timing");
  const auto baseline = read_baseline(a.baseline_path, a.problem);
  auto j = make_job(a);  // its problem_sha256 set by the first process
  // --cache-dir's, or one from the environment (an internal error before, with no result).
  check_utf8(a.cache_dir.empty()
                 ? "the cache folder (KJUDGE_CACHE_DIR, else XDG_CACHE_HOME or HOME)"
                 : "--cache-dir",
             j.cache_dir.string());
  // Kept ncu reports (docs/cli.md) go to a folder checked now, not once the evaluation is over.
  fs::path ncu_keep;
  if (const char* keep = std::getenv("KJUDGE_NCU_KEEP"); a.profile && keep && *keep) {
    std::error_code ec;
    ncu_keep = keep;
    fs::create_directories(ncu_keep, ec);
    if (ec || !fs::is_directory(ncu_keep) || ::access(ncu_keep.c_str(), W_OK) != 0)
      KJ_THROW(error_kind::usage, "KJUDGE_NCU_KEEP={}: not a folder kjudge can write into{}", keep,
               ec ? ": " + ec.message() : std::string());
  }
  eval::run_options ro;
  ro.timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
  ro.echo_output = a.verbose;
  ro.use_pool = use_pool(a);
  if (ro.use_pool) ro.max_pools = max_pools();  // a limit on pools: read where one may start
  // --processes: the job again in a fresh worker each time, until one is not correct; the
  // timing pooled (eval/combine.hpp). The pool, where used, makes each later one quick.
  std::vector<eval_result> runs;
  for (std::size_t p = 0; p < a.processes; ++p) {
    // Each process its own timing key, so its timed inputs' values are its own: with one key
    // for all, every process timed the same values in the same order, and a candidate that
    // kept its outputs in a file replayed them in the later processes (correct, 8.6x).
    if (p > 0) j.timing_key = eval::fresh_secret();
    runs.push_back(eval::evaluate(j, ro));
    if (p == 0) j.problem_sha256 = runs.front().problem.sha256;  // later workers load those bytes
    if (p > 0) eval::stop_if_files_changed(runs.front(), runs.back());
    if (runs.back().status != eval_status::correct) break;
  }
  auto result = eval::combine_runs(std::move(runs), a.processes, j.timing_options);
  const bool show = a.json_path != "-";
  if (show && !a.summary_only) {
    if (a.quiet) {
      print(std::string(to_string(result.status)) + "\n");
    } else {
      report::terminal_options to;
      to.verbose = a.verbose;
      print(report::render_terminal(result, to));
    }
  }
  if (a.profile) {
    eval::profile_options po;
    po.collect_counters = !a.no_counters;
    po.counters.ncu = a.ncu_path;
    po.counters.cache_control = a.ncu_cache_control;
    po.counters.timeout = ro.timeout;
    po.counters.echo_output = a.verbose;
    po.cache_root = j.cache_dir;
    // Keep ncu's raw report (for fixtures and for reading it by hand), documented in docs/cli.md.
    if (!ncu_keep.empty()) po.counters.work_dir = ncu_keep;
    if (!a.quiet && show)
      po.progress = [](std::string_view s) {
        std::fprintf(stderr, "kjudge profile: %.*s\n", static_cast<int>(s.size()), s.data());
      };
    const auto started = std::chrono::steady_clock::now();
    const auto rep = eval::profile_evaluation(j, result, po);
    result.profile = profile::to_json(rep);
    result.wall_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (show && !a.quiet) {
      if (a.summary_only) {
        // The verdict first: a summary of counters alone read as a normal profile of a
        // candidate that did not compile.
        print(report::render_status(result) +
              profile::agent_summary(rep, baseline ? &*baseline : nullptr));
      } else {
        print("\n" + profile::render_report(rep));
        if (baseline) print("\n" + profile::agent_summary(rep, &*baseline));
      }
    }
  }
  // The report is already out, with the verdict; the file the user asked for is not.
  const int written = write_json_last(
      a.json_path, report::render_json(result), a.profile ? "profile" : "eval",
      fmt::format(" (the evaluation ended {}, exit code {}; exiting with {} instead)",
                  to_string(result.status), exit_code_for(result.status),
                  exit_code::result_not_written),
      &json_target);
  // Builds accumulate, one or more an evaluated candidate: the cache is kept within its limit
  // (kjudge cache, docs/cli.md), once the result is out.
  prune_after_evaluation(j.cache_dir, a.quiet);
  const int status = report_written_or(exit_code_for(result.status), to_string(result.status),
                                       a.profile ? "profile" : "eval");
  return written != 0 ? exit_code::result_not_written : status;
}

int run_profile(eval_args a) {
  a.profile = true;
  return run_eval(a);
}

}  // namespace kj::app
