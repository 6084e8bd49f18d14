#pragma once
/** @file The result of `kjudge profile` (and the `profile` part of `kjudge eval --profile`): for
 *  the reference and the candidate, every kernel's counters (Nsight Compute) and derived metrics,
 *  their total, the bottleneck class, the roofline point against the measured ceilings, and what
 *  CUPTI saw in an unprofiled forward (launches, copies, kernel durations, peak memory). Built by
 *  build_report() from raw inputs, so every number in it went through derive()/the invariants.
 *  JSON schema `kjudge.profile/2` (docs/result-schema.md); to_json/report_from_json round-trip so
 *  a saved profile can serve as the baseline of the next one (deltas in the agent summary). */

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/result.hpp>
#include <kjudge/profile/ceilings.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/derive.hpp>
#include <kjudge/profile/kernel_metrics.hpp>
#include <kjudge/profile/launch_summary.hpp>

namespace kj::profile {

/** Version 2 writes null where version 1 wrote 0 or "" for what was not measured (ceilings,
 *  device times, ncu's tool and settings); report_from_json reads both. */
inline constexpr const char* profile_schema = "kjudge.profile/2";
inline constexpr const char* profile_schema_v1 = "kjudge.profile/1";

/** CUPTI and ncu durations of one kernel are compared (flag `duration_disagrees`) only for
 *  kernels at least this long, ns: shorter ones are dominated by launch jitter. */
inline constexpr double duration_match_min_ns = 5000.0;
/** ... and must then agree within this many percent of ncu's duration (issue 3). */
inline constexpr double duration_match_tolerance_pct = 10.0;

/** One kernel (or a total): raw counters and everything derived from them. */
struct kernel_profile {
  kernel_metrics counters;
  derived_metrics derived;
};

/** A kernel as CUPTI timed it in an unprofiled forward (cold L2, like ncu's replays). */
struct timed_kernel {
  std::string name;  ///< demangled
  double duration_ns = 0;
  launch_dims grid, block;
  std::uint32_t stream_id = 0;
};

/** What CUPTI saw during one forward of a side, and the allocator/device memory figures. */
struct cupti_forward {
  std::vector<timed_kernel> kernels;  ///< launch order
  checked<launch_summary> launches;   ///< counts, busy time; failed when its checks failed
  checked<peak_memory> memory;        ///< peak over the baseline (invariant 10)
  double event_time_ns = 0;           ///< events around that same forward
};

/** Agreement of one kernel's duration between CUPTI (kjudge's unprofiled forward) and ncu's
 *  gpu__time_duration.sum, matched by launch order and name. */
struct duration_match {
  std::string name;
  double cupti_ns = 0;
  double ncu_ns = 0;
  /** |cupti - ncu| / ncu x 100. The target (issue 3) is <= 10% for kernels >= 5 us. */
  double difference_pct = 0;
};

/** One side of the comparison. */
struct side_profile {
  std::string side;  ///< "reference" or "candidate"
  /** Per kernel, launch order, from ncu. Empty when counters were not collected. */
  std::vector<kernel_profile> kernels;
  /** aggregate() of `kernels`, derived; absent when `kernels` is empty. */
  std::optional<kernel_profile> total;
  /** classify_forward(): launch-bound when gaps dominate, else the class of the total. */
  classification bound;
  /** Roofline point of the total: arithmetic intensity (FLOP per DRAM byte) and achieved FLOP/s
   *  (all types), against the ceilings; each failed/no_data when its inputs are missing. */
  checked<double> intensity_flop_per_byte;
  checked<double> achieved_flop_per_s;
  /** The roof at this intensity: min(peak compute of the dominant type, intensity x DRAM roof). */
  checked<double> attainable_flop_per_s;
  std::optional<cupti_forward> cupti;     ///< absent when CUPTI was unavailable
  std::vector<duration_match> durations;  ///< when both ncu and CUPTI data exist
  double device_time_ns = 0;              ///< the eval's device median for this side (0: not timed)
  /** device_time_ns is a median of CUDA graph replays, which leave out most of the gaps between
   *  eagerly issued launches: the launch-bound rule then takes the eager forward's CUPTI span. */
  bool device_time_from_graph = false;
  std::vector<flag> flags;  ///< every flag of this side, each once
};

/** How the counters were collected (or why not). */
struct counter_source {
  bool collected = false;
  std::string tool;                ///< "ncu 2025.3.1.0"
  std::string clock_control;       ///< "none" (rule 12)
  std::string cache_control;       ///< "all": caches flushed before every replay pass
  std::string unavailable_reason;  ///< set when !collected: "ncu not found on PATH", ...
  double wall_s = 0;               ///< time the profiled run took
  /** Metrics kjudge reads that ncu's table had no column for (ncu_report::missing_metrics; one
   *  table serves both sides, so one list per report). Their counters read as 0, so every figure
   *  computed from one is withheld (`no_data`, naming it), and the report carries the warning
   *  `ncu_metrics_missing`. */
  std::vector<std::string> missing_metrics;
  /** Why kernels' NVTX stacks could not be read to their end (ncu_report::nvtx_unreadable): the
   *  warning `ncu_nvtx_unreadable`. */
  std::vector<std::string> nvtx_unreadable;
};

/** The `ncu_metrics_missing` flag names at most this many metrics (then "and N more"); the JSON's
 *  `counters.missing_metrics` and the text report list them all. */
inline constexpr std::size_t missing_metrics_named = 8;

/** The whole profile. */
struct profile_report {
  std::string schema = profile_schema;
  std::string problem;          ///< path as given
  std::string candidate;        ///< path as given
  std::string gpu;              ///< device name
  std::string ceilings_source;  ///< "roofline cache <path> (measured <date>) + datasheet H200 SXM"
  ceilings roofs;
  counter_source counters;
  side_profile reference;
  side_profile candidate_side;
  checked<double> fusion_ratio;  ///< reference launches / candidate launches (CUPTI, else ncu)
  std::vector<flag> flags;       ///< report-level flags (ceilings' own checks, missing tools)
};

/** Raw inputs of one side. */
struct side_inputs {
  std::vector<kernel_metrics> ncu_kernels;  ///< empty when counters were not collected
  std::optional<cupti_forward> cupti;
  double device_time_ns = 0;            ///< eval device median; 0 when not timed
  bool device_time_from_graph = false;  ///< that median is of CUDA graph replays
};

/** Derives every metric of both sides against `roofs`, matches CUPTI and ncu durations, computes
 *  the fusion ratio, and collects flags. Figures that need a counter in
 *  `counters.missing_metrics` are withheld (`no_data`, naming the metric), not computed from the
 *  0 it reads as. Never throws on bad data: broken numbers become flags. */
[[nodiscard]] profile_report build_report(std::string problem, std::string candidate,
                                          std::string gpu, const ceilings& roofs,
                                          std::string ceilings_source, counter_source counters,
                                          const side_inputs& reference_side,
                                          const side_inputs& candidate_side);

[[nodiscard]] nlohmann::json to_json(const profile_report& r);
/** Reads what to_json wrote (for a baseline). Throws kj::error (parse) on a schema mismatch. */
[[nodiscard]] profile_report report_from_json(const nlohmann::json& j);

/** The terminal form: per side, the top kernels with time, SOL, occupancy, DRAM bandwidth, bound;
 *  the totals side by side; launches, fusion ratio, peak memory; every flag. At most
 *  `max_kernels` kernels per side. */
[[nodiscard]] std::string render_report(const profile_report& r, int max_kernels = 8);

/** The compact agent-readable summary (what the seed's profile_kernel tool printed, but true):
 *  top kernels by time, SOL, bottleneck, the 2-3 largest stall reasons, occupancy limiters, short
 *  hints that follow from the numbers, and deltas against `baseline` when given. */
[[nodiscard]] std::string agent_summary(const profile_report& r,
                                        const profile_report* baseline = nullptr);

namespace detail {
// Text pieces shared by render_report() and agent_summary() (report_text.cpp).

/** "7.42 us", "1.23 ms", "850 ns". */
[[nodiscard]] std::string format_ns(double ns);
/** A kernel name cut to `max_chars`: no "void ", no parameter list; when still too long, the
 *  function's own namespaces go and the template head is kept
 *  ("vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, ...>"). */
[[nodiscard]] std::string short_kernel_name(std::string_view name, std::size_t max_chars);
/** `format(value)` when the metric passed; "n/a" when it has no data; "FAILED <code>" when it
 *  broke an invariant, so a failed metric never shows a number. */
template <class T, class Format>
[[nodiscard]] std::string metric_text(const checked<T>& m, Format&& format) {
  if (m.ok()) return std::forward<Format>(format)(m.value());
  if (m.is_missing()) return "n/a";
  return "FAILED " + m.failure().code;
}
/** A kernel's share of its side's summed kernel time, %: fails with the duration check of the
 *  kernel or of the total (a broken time has no share). */
[[nodiscard]] checked<double> kernel_share_pct(const kernel_profile& k, const side_profile& s);
/** The side's forward time, ns, and what it is: the eval's device median, else the CUPTI span of
 *  the unprofiled forward, else the sum of ncu kernel durations; 0 with "not timed". */
struct side_time {
  double ns = 0;
  std::string what;
};
[[nodiscard]] side_time forward_time(const side_profile& s);
/** The launch counts the fusion ratio divides: CUPTI's device records when both sides have them,
 *  else both sides' ncu kernel counts (never one of each); `source` says which. */
struct launch_counts {
  std::size_t reference = 0, candidate = 0;
  const char* source = "ncu kernels";
};
[[nodiscard]] launch_counts fusion_counts(const side_profile& reference,
                                          const side_profile& candidate);
/** One side's kernel launches: CUPTI device records when recorded, else its ncu kernels; `source`
 *  says which (one of the two fusion_counts() sources). */
struct side_launches {
  std::size_t count = 0;
  const char* source = "ncu kernels";
};
[[nodiscard]] side_launches launch_count(const side_profile& s);
/** Indices of `s.kernels`, longest ncu duration first. */
[[nodiscard]] std::vector<std::size_t> kernels_by_time(const side_profile& s);
/** The kernels of a CUPTI forward, longest duration first (ties in launch order). */
[[nodiscard]] std::vector<const timed_kernel*> cupti_kernels_by_time(const cupti_forward& f);
/** Stall reasons of a derived metric set, largest share first (empty when not ok). */
[[nodiscard]] std::vector<std::pair<std::string, double>> top_stalls(const derived_metrics& d,
                                                                     std::size_t n);
/** "registers (4 blocks/SM)": the smallest non-zero launch__occupancy_limit_*; empty when none
 *  was collected. */
[[nodiscard]] std::string occupancy_limiter(const kernel_metrics& k);
}  // namespace detail

}  // namespace kj::profile
