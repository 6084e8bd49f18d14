#include <kjudge/eval/ncu_run.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/runner/process.hpp>

namespace kj::eval {

namespace fs = std::filesystem;

namespace {

/** "2025.3.1.0" from `ncu --version`, or "" when it cannot be run. */
std::string ncu_version(const fs::path& ncu) {
  runner::spawn_options so;
  so.argv = {ncu.string(), "--version"};
  so.timeout = std::chrono::seconds(30);
  const auto r = runner::run_process(so);
  const auto at = r.output_tail.find("Version ");
  if (!r.ok() || at == std::string::npos) return "";
  const auto end = r.output_tail.find_first_of(" \n", at + 8);
  return r.output_tail.substr(at + 8, end == std::string::npos ? end : end - at - 8);
}

/** Base metric names `ncu --query-metrics` lists for the device present; empty on failure. */
std::set<std::string> queried_metrics(const fs::path& ncu) {
  runner::spawn_options so;
  so.argv = {ncu.string(), "--query-metrics"};
  so.timeout = std::chrono::seconds(120);
  so.output_tail_bytes = 8 << 20;
  const auto r = runner::run_process(so);
  std::set<std::string> names;
  if (!r.ok()) return names;
  std::istringstream lines(r.output_tail);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (words >> first && first.find("__") != std::string::npos) names.insert(first);
  }
  return names;
}

}  // namespace

std::vector<std::string> ncu_extra_args() {
  std::vector<std::string> args;
  const char* env = std::getenv("KJUDGE_NCU_ARGS");
  if (env == nullptr) return args;
  std::istringstream words(env);
  for (std::string w; words >> w;) args.push_back(w);
  return args;
}

std::vector<std::string> ncu_wrapper(const fs::path& ncu, const std::vector<std::string>& metrics,
                                     const fs::path& log, const std::string& cache_control,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {ncu.string(),
                                   "--clock-control",
                                   "none",
                                   "--cache-control",
                                   cache_control,
                                   "--target-processes",
                                   "application-only",
                                   "--nvtx",
                                   "--nvtx-include",
                                   std::string(profile::ncu_reference_range) + "/",
                                   "--nvtx-include",
                                   std::string(profile::ncu_candidate_range) + "/",
                                   "--csv",
                                   "--page",
                                   "raw",
                                   "--print-units",
                                   "base",
                                   "--metrics",
                                   fmt::format("{}", fmt::join(metrics, ",")),
                                   "--log-file",
                                   log.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

fs::path find_ncu() {
  if (const char* env = std::getenv("KJUDGE_NCU"); env != nullptr && *env != '\0')
    return runner::is_executable_file(env) ? fs::path(env) : fs::path();
  if (fs::path on_path = runner::find_on_path("ncu"); !on_path.empty()) return on_path;
  for (const char* p : {"/usr/local/cuda/bin/ncu", "/usr/local/cuda/nsight-compute/ncu"})
    if (runner::is_executable_file(p)) return p;
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/opt/nvidia/nsight-compute", ec))
    if (runner::is_executable_file(e.path() / "ncu")) found.push_back(e.path() / "ncu");
  std::sort(found.begin(), found.end());
  return found.empty() ? fs::path() : found.back();
}

bool ncu_unknown_metric(const std::string& log) {
  return log.find("Failed to find metric") != std::string::npos;  // "...metric" and "...metrics"
}

std::string ncu_failure_reason(const std::string& log) {
  if (log.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return "the user may not read the GPU's performance counters (ERR_NVGPUCTRPERM: the driver "
           "restricts them to administrators; see NVreg_RestrictProfilingToAdminUsers)";
  const auto error_at = log.find("==ERROR==");
  if (log.find("Failed to initialize the profiler") != std::string::npos ||
      log.find("LibraryNotLoaded") != std::string::npos)
    return "Nsight Compute could not initialise its profiler here (" +
           runner::last_lines(log.substr(error_at == std::string::npos ? 0 : error_at), 2) + ")";
  if (ncu_unknown_metric(log)) return "ncu does not know a requested metric on this GPU";
  if (error_at != std::string::npos) return runner::last_lines(log.substr(error_at), 3);
  return "";
}

counter_run collect_counters(job j, const counter_options& options) {
  counter_run out;
  out.source.clock_control = "none";
  out.source.cache_control = options.cache_control;
  const fs::path ncu = options.ncu.empty() ? find_ncu() : options.ncu;
  if (ncu.empty()) {
    out.source.unavailable_reason =
        "Nsight Compute (ncu) was not found: set KJUDGE_NCU or put ncu on PATH";
    return out;
  }
  const std::string version = ncu_version(ncu);
  out.source.tool = "ncu " + (version.empty() ? std::string("(version unknown)") : version);
  const std::vector<std::string> extra = ncu_extra_args();
  if (!extra.empty())
    out.source.tool += fmt::format(" with KJUDGE_NCU_ARGS: {}", fmt::join(extra, " "));

  j.trials = 1;
  j.stress = false;
  j.timing = false;
  j.profile_ranges = true;

  // A temporary folder goes away on every return; a kept one (KJUDGE_NCU_KEEP) stays.
  std::optional<temp_dir> temporary;
  if (options.work_dir.empty()) {
    try {
      temporary.emplace("kjudge-ncu-");
    } catch (const kj::error& e) {
      out.source.unavailable_reason = "no folder for ncu's report: " + e.message();
      return out;
    }
  }
  const fs::path dir = temporary ? temporary->path() : options.work_dir;
  const fs::path log = dir / "ncu-raw.csv";
  std::vector<std::string> metrics = profile::ncu_metric_list();
  run_options ro;
  ro.timeout = options.timeout;
  ro.echo_output = options.echo_output;

  const auto start = std::chrono::steady_clock::now();
  std::string text;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ro.wrapper = ncu_wrapper(ncu, metrics, log, options.cache_control, extra);
    out.worker = evaluate(j, ro);
    std::error_code ec;
    text = fs::exists(log, ec) ? read_file(log) : std::string();
    const std::string log_and_output = text + "\n" + out.worker.worker.output_tail;
    if (attempt == 0 && ncu_unknown_metric(log_and_output)) {
      // Another architecture: keep the metrics this device has, and try once more.
      const auto known = queried_metrics(ncu);
      std::erase_if(
          metrics, [&](const std::string& m) { return !known.contains(m.substr(0, m.find('.'))); });
      continue;
    }
    out.source.unavailable_reason = ncu_failure_reason(log_and_output);
    break;
  }
  out.source.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A table with both sides' kernels serves: an ==ERROR== line (ncu's about one kernel, or one
  // the candidate printed itself, which the worker's output holds too) does not take it away; a
  // worker that did not end normally does (what it did not run has no counters), as does a
  // table with one side's kernels alone (the run failed on the other's).
  const bool worker_ran =
      out.worker.status == eval_status::correct || out.worker.status == eval_status::incorrect;
  if (!out.source.unavailable_reason.empty() && !worker_ran) return out;
  try {
    const auto report = profile::parse_ncu_raw_csv(text);
    out.reference = profile::kernels_in_range(report, profile::ncu_reference_range);
    out.candidate = profile::kernels_in_range(report, profile::ncu_candidate_range);
    if (!out.source.unavailable_reason.empty()) {
      if (out.reference.empty() || out.candidate.empty()) {
        out.reference.clear();
        out.candidate.clear();
        return out;
      }
      out.source.unavailable_reason.clear();
    }
    out.source.collected = !report.kernels.empty();
    out.source.missing_metrics = report.missing_metrics;
    out.source.nvtx_unreadable = report.nvtx_unreadable;
    if (!out.source.collected)
      out.source.unavailable_reason =
          fmt::format("ncu profiled no kernel (the profiled worker ended: {})",
                      out.worker.message.empty() ? out.worker.worker.outcome : out.worker.message);
  } catch (const kj::error& e) {
    // ncu's own failure, where it said one, rather than what its page lacks for it.
    if (out.source.unavailable_reason.empty())
      out.source.unavailable_reason = "ncu's report could not be read: " + e.message();
  }
  return out;
}

}  // namespace kj::eval
