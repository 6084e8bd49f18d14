#pragma once
/** @file The timing engine (docs/measurement-rules.md, rules 1-9): warm-up, cold L2, rotating
 *  inputs, interleaved reference/candidate samples, three figures per side (device, stream, host
 *  wall), stopping on a noise target within a wall-clock budget per side, throttle-aware, and the
 *  speedup as a ratio of medians with a bootstrap confidence interval. All sample values are
 *  microseconds.
 */

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/stats.hpp>
#include <kjudge/core/units.hpp>
#include <kjudge/measure/target.hpp>

namespace kj::measure {

enum class figure_kind { device, stream, host_wall };
[[nodiscard]] const char* to_string(figure_kind k) noexcept;

struct timing_options {
  /** Wall-clock budget per side; the loop stops when a side's spent time passes it. */
  seconds budget_per_side{1.0};
  /** When set, the loop also stops at this time (stopped_by "time-limit"), whatever the budget
   *  left: `kjudge eval` sets it from what its --timeout leaves, so that a budget longer than
   *  the evaluation may take ends in figures, not in a timed-out evaluation. */
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::size_t min_samples = 20;
  std::size_t max_samples = 100000;
  /** Stop once every enabled figure of both sides has a relative standard error of its median
   *  (detail::median_rse: over samples and over input sets) below this, and min_samples. */
  double target_rse_pct = 0.5;
  /** Minimum wall time spent sampling before the noise rule may stop the loop. */
  seconds min_time{0.0};
  /** Flush L2 (write >= 2x L2 size) before each sample. */
  bool cold = true;
  std::size_t warmup_runs = 3;
  seconds warmup_min_time{0.02};
  /** GPU figures; on a CPU-only run both are off and only host_wall is taken. */
  bool gpu = true;
  /** Samples taken with the SM clock under this fraction of the default clock are discarded. */
  double throttle_fraction = 0.75;
  /** The most input sets the caller prepares for the samples to rotate through (fewer when memory
   *  bounds them): the median's error over sets (figure::rse_sets_pct) shrinks only with more
   *  sets, not with more samples. The engine times the sets its targets report. */
  std::size_t max_input_sets = 8;
  /** Bootstrap settings for the speedup CI. */
  std::size_t bootstrap_resamples = 2000;
  double confidence = 0.95;
  /** How long the blocking kernel holds the stream before declaring a host synchronisation. */
  milliseconds blocking_timeout{200.0};
  /** Device figure by replaying a CUDA graph of the forward (one per input set) behind the
   *  blocking kernel, when both sides can be captured: the GPU's launch path of a graph is the
   *  same in every process, where that of eagerly issued launches is not (the reference's
   *  device figure moved 6-7% between processes on the H200, its graph replay 0.4-0.8%:
   *  bench/ref_repeat.py, `kjudge eval`). Each replay is followed by an untimed eager forward so
   *  that the stream and host-wall samples find the eager path as warm as without replays.
   *  Otherwise, or when false, the forward's own launches: both sides are always timed the
   *  same way (invariant 12). `kjudge eval` sets it unless --no-graph (docs/methodology.md);
   *  false here, for callers that time bare targets. */
  bool graph_replay = false;
};

/** Bootstrap resamples of a figure's input sets for its relative standard error: enough for the
 *  error's first two digits, few enough for the stopping rule to compute after every round. */
inline constexpr std::size_t rse_resamples = 200;

/** The device figure's method when it replays CUDA graphs (timing_options::graph_replay). */
inline constexpr std::string_view graph_device_method = "cuda-graph+blocking-kernel+events";
/** How a device figure's note begins when graph replay was asked for and not possible. */
inline constexpr std::string_view no_graph_replay_note = "no CUDA graph replay";

/** One figure of one side. */
/** The note of a figure that kept no sample because every one was taken under a throttled
 *  clock (pooled over processes: the end of the note of the process it stands for). */
inline constexpr std::string_view k_all_throttled_note =
    "no samples kept: every sample ran under a throttled clock";
/** The note of a figure that kept no sample because every one waited for a CPU
 *  (detail::waited_for_cpu), and of one whose samples went for either reason. */
inline constexpr std::string_view k_all_cpu_wait_note =
    "no samples kept: every sample waited for a CPU";
inline constexpr std::string_view k_all_discarded_note =
    "no samples kept: every sample waited for a CPU or ran under a throttled clock";

struct figure {
  figure_kind kind = figure_kind::device;
  /** "cuda-graph+blocking-kernel+events", "blocking-kernel+events", "events-as-issued",
   *  "host-steady-clock+sync" (or "host-steady-clock" on the CPU). */
  std::string method;
  bool cold = true;
  bool valid = false;              ///< false: not taken or unusable; see note
  std::string note;                ///< why invalid, or remarks (why no graph replay)
  bool noisy = false;              ///< budget ran out before the noise target
  std::vector<double> samples_us;  ///< kept samples, in order taken
  /** The input set each kept sample ran on (parallel to samples_us): a set's buffers, where they
   *  lie and what they hold, move all of its samples together. */
  std::vector<std::uint32_t> samples_set;
  /** The median of each input set's samples, by set number (NaN: none kept on that set). */
  std::vector<double> set_medians_us;
  /** Of samples_us; its rse_pct is the larger of the two below (stats::grouped_rse), what the
   *  stopping rule judges. */
  stats::summary summary;
  /** The median's relative standard error with the samples taken as independent, in percent
   *  (infinite with fewer than two samples; NaN: not computed, as in a result written before
   *  kjudge reported it). */
  double rse_samples_pct = std::numeric_limits<double>::quiet_NaN();
  /** Its relative standard error over resamples of whole input sets, in percent (NaN: fewer than
   *  stats::min_bootstrap_groups sets with samples): the sets' own differences, which more samples
   *  on the same sets do not narrow; infinite for a median of 0 with a spread. */
  double rse_sets_pct = std::numeric_limits<double>::quiet_NaN();
  std::size_t discarded_throttled = 0;
  /** Host-timed samples (stream, host wall) discarded because the threads doing the work waited
   *  for a CPU during them (detail::waited_for_cpu; docs/methodology.md, Timing 7). */
  std::size_t discarded_cpu_wait = 0;
  /** The longest such wait among the discarded samples, in microseconds (0: none discarded). */
  double discarded_cpu_wait_max_us = 0;
  /** The longest wait for a CPU among the kept samples, in microseconds; NaN where the waits
   *  were not read (a device figure, or no statistics: comparison::cpu_wait says why). */
  double cpu_wait_max_us = std::numeric_limits<double>::quiet_NaN();
  /** The kept samples' waits for a CPU over their time, in percent (NaN where not read). */
  double cpu_wait_share_pct = std::numeric_limits<double>::quiet_NaN();
  /** The kept samples' waits summed, in microseconds (the share's numerator; pooled over
   *  processes by eval::combine_runs). */
  double cpu_wait_total_us = 0;
  /** With `--processes` N > 1 (eval::combine_runs): the worker process (0 .. N-1) each sample
   *  came from, parallel to samples_us (samples_set then numbers process p's set s as
   *  p * sets + s); empty for one process. */
  std::vector<std::uint32_t> samples_process;
  /** Each process's own median of this figure (empty for one process). */
  std::vector<double> process_medians_us;
  /** The processes' part of the pooled median's standard error (the standard deviation of their
   *  medians times the square root of the sum of their squared shares of the samples: over
   *  sqrt(N) for equal shares), over the pooled median, in percent; part of rse_pct. NaN for one
   *  process. */
  double rse_processes_pct = std::numeric_limits<double>::quiet_NaN();
};

struct side_result {
  std::string name;
  figure device, stream, host_wall;
  bool host_sync_detected = false;  ///< the forward waited for the host; device figure invalid
  std::size_t warmup_runs = 0;
  double warmup_first_call_ms = 0;  ///< the first call of the warm-up (of this timing run)
  double spent_s = 0;               ///< wall time spent measuring this side
  /** On the CPU: rounds whose sample waited for a CPU, left out of spent_s (at most
   *  detail::cpu_wait_budget_factor budgets). */
  double cpu_wait_s = 0;
  /** kjudge's checks inside this side's rounds (target::take_check_seconds), left out of
   *  spent_s. */
  double checks_s = 0;
  std::size_t input_sets = 0;
};

/** The kept samples' waits for a CPU (figure::cpu_wait_total_us) over their summed time, in
 *  percent; NaN where the waits were not read (cpu_wait_max_us NaN) or nothing was kept. */
[[nodiscard]] inline double cpu_wait_share(const figure& f) {
  double total = 0;
  for (const double us : f.samples_us) total += us;
  if (std::isnan(f.cpu_wait_max_us) || !(total > 0))
    return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * f.cpu_wait_total_us / total;
}

/** The side's figure of kind `k` (defined with the result's names, in kjudge/core). */
[[nodiscard]] const figure& figure_of(const side_result& s, figure_kind k) noexcept;

struct speedup {
  figure_kind kind = figure_kind::device;
  bool valid = false;
  stats::ratio_ci ci;  ///< reference median / candidate median
};

struct clock_record {
  bool available = false;  ///< NVML present and answering
  std::string source;      ///< "nvml" or why not
  double default_sm_mhz =
      0;  ///< the clock samples are judged against (default applications clock, else max)
  double max_sm_mhz = 0;
  double median_sm_mhz = 0;  ///< over the samples taken
  double min_sm_mhz = 0;
  std::vector<std::string> throttle_reasons;  ///< active during sampling (names), if any
};

/** Whether the host-timed samples' waits for a CPU were read (detail::cpu_wait_monitor). */
struct cpu_wait_record {
  bool checked = false;
  /** "worker threads" (a CPU run: every thread of the process), "timing thread" (a GPU run: the
   *  thread that issues the work and waits for it), or empty when not checked. */
  std::string scope;
  std::string note;  ///< why not checked
};

struct comparison {
  side_result reference, candidate;
  std::vector<speedup> speedups;  ///< one per figure kind valid on both sides
  clock_record clocks;
  cpu_wait_record cpu_wait;
  bool interleaved = true;
  std::size_t l2_flush_bytes = 0;  ///< 0 when warm
  std::string stopped_by;          ///< "noise-target", "budget", "max-samples", "time-limit"
  /** Worker processes whose samples are pooled here (`--processes`; eval::combine_runs). */
  std::size_t processes = 1;
};

/** Device facts the engine needs, filled from cudaGetDeviceProperties by the caller. */
struct device_facts {
  int ordinal = 0;
  std::size_t l2_bytes = 0;
};

/** Times `reference` and `candidate` with the same method, interleaved (A B A B ...). `stream` is
 *  the cudaStream_t (as void*) both targets issue their work on; ignored when !options.gpu. Throws
 *  kj::error on CUDA failures outside the targets; a target's own exception propagates with the
 *  side's name attached. */
[[nodiscard]] comparison time_pair(target& reference, target& candidate, void* stream,
                                   const device_facts& device, const timing_options& options);

/** Times a single target by the same sampling loop (the tests' way of timing known kernels; no
 *  command uses it). Its result is the side alone: no clock record, flush size or stopping
 *  reason, which a comparison carries. */
[[nodiscard]] side_result time_single(target& t, void* stream, const device_facts& device,
                                      const timing_options& options);

}  // namespace kj::measure
