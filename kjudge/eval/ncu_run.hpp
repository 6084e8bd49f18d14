#pragma once
/** @file Hardware counters of one forward per side: the worker runs under Nsight Compute with
 *  `--clock-control none` (rule 12: kjudge never changes clocks), ncu's default cache control
 *  (`all`: caches flushed before every replay pass, so counters describe a cold-L2 forward, like
 *  the timing engine's device figure), only the kernels inside the NVTX ranges kjudge pushes
 *  around the profiled forwards (job::profile_ranges), and an explicit metric list
 *  (profile::ncu_metric_list, intersected with `ncu --query-metrics` off Hopper). ncu's report goes
 *  to a log file, never through the candidate's stdout. */

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/orchestrator.hpp>
#include <kjudge/profile/kernel_metrics.hpp>
#include <kjudge/profile/report.hpp>

namespace kj::eval {

/** ncu to use: $KJUDGE_NCU, else `ncu` on PATH, else the toolkit's and Nsight Compute's usual
 *  install folders. Empty when none is found. */
[[nodiscard]] std::filesystem::path find_ncu();

/** Extra ncu options from $KJUDGE_NCU_ARGS (e.g. "--replay-mode application"), split on
 *  whitespace with no quoting; empty when unset. They go after kjudge's own options. */
[[nodiscard]] std::vector<std::string> ncu_extra_args();

/** ncu and its options for profiling a worker (whose command line follows): kjudge's options (file
 *  comment), `--metrics`, `--log-file log`, then `extra` (ncu_extra_args). */
[[nodiscard]] std::vector<std::string> ncu_wrapper(const std::filesystem::path& ncu,
                                                   const std::vector<std::string>& metrics,
                                                   const std::filesystem::path& log,
                                                   const std::string& cache_control,
                                                   const std::vector<std::string>& extra);

struct counter_run {
  profile::counter_source source;  ///< collected, tool, controls, or why not
  std::vector<profile::kernel_metrics> reference, candidate;  ///< launch order
  eval_result worker;  ///< the profiled worker's own result (status, output tail)
};

struct counter_options {
  std::filesystem::path ncu;  ///< empty: find_ncu()
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  bool echo_output = false;
  std::filesystem::path work_dir;  ///< where ncu's log goes (a fresh temporary folder if empty)
  /** ncu's --cache-control: "all" flushes every cache before each replay pass (each kernel runs
   *  cold), "none" leaves them as the previous kernel left them. */
  std::string cache_control = "all";
};

/** Runs `j` (made a profile job: one trial, no timing, NVTX ranges) under ncu, with
 *  ncu_extra_args() appended to its options, and parses the counters. source.tool names the extra
 *  options when there are any. Never throws for ncu problems: they end up in
 *  source.unavailable_reason. */
[[nodiscard]] counter_run collect_counters(job j, const counter_options& options);

/** The reason ncu's log gives for failing, in a sentence ("the user may not read the GPU's
 *  performance counters (ERR_NVGPUCTRPERM)..."), or empty when the log shows no known failure. */
[[nodiscard]] std::string ncu_failure_reason(const std::string& log);
/** Whether ncu's log says a requested metric does not exist on this GPU (the run is retried with
 *  the metrics `ncu --query-metrics` lists). */
[[nodiscard]] bool ncu_unknown_metric(const std::string& log);

}  // namespace kj::eval
