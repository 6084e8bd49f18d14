#pragma once
/** @file Launches, device time and peak memory of one forward, from its device records
 *  (cupti_activity.hpp) and numbers the caller measured (event time, allocator statistics,
 *  cudaMemGetInfo). Pure C++; the checks are those of docs/measurement-rules.md rules 10, 17, 18
 *  and invariants 1, 2, 10, 11. Flag codes are listed in docs/profile-metrics.md. */

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/core/units.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/cupti_activity.hpp>

namespace kj::profile {

/** What the device did during one forward. Launches are device kernel records only (rule 17);
 *  copies and fills are counted apart. Times are over timed kernels (untimed ones still count as
 *  launches). */
struct launch_summary {
  std::uint64_t kernel_launches = 0;
  std::uint64_t memcpy_count = 0;
  std::uint64_t memset_count = 0;
  std::uint64_t memcpy_bytes = 0;
  std::uint64_t memset_bytes = 0;
  std::uint64_t untimed_kernels = 0;          ///< kernel records CUPTI could not time
  std::uint64_t dropped_records = 0;          ///< records CUPTI lost: counts are then lower bounds
  nanoseconds kernel_time_sum{0};             ///< sum of kernel durations
  nanoseconds kernel_busy_time{0};            ///< union of kernel intervals (overlap counted once)
  nanoseconds kernel_span{0};                 ///< first kernel start to last kernel end
  nanoseconds memory_op_time_sum{0};          ///< sum of memcpy and memset durations
  std::set<std::uint32_t> kernel_streams;     ///< CUPTI stream ids that ran kernels
  std::set<std::uint32_t> memory_op_streams;  ///< CUPTI stream ids that ran memcpy / memset
};

/** Counts and times of `records` (one forward). */
[[nodiscard]] launch_summary summarize_launches(const activity_records& records);

/** Total length of the union of [start, end) intervals, ns; overlapping parts count once. */
[[nodiscard]] nanoseconds interval_union(std::vector<std::pair<std::uint64_t, std::uint64_t>> iv);

/** How the forward was timed, for the cross-checks. 0 / empty: not measured, check skipped. */
struct timed_forward {
  bool cuda_candidate = true;  ///< a side that claims to run on the GPU (invariant 11)
  bool eager = true;           ///< launched one by one from the host (invariant 1)
  nanoseconds event_time{0};   ///< events around the call on the timed stream
  /** The call waited for the host while queued: event_time holds those waits too, so only
   *  invariant 2's lower bound (kernels the events missed) is checked against it. */
  bool event_includes_host_waits = false;
  nanoseconds host_wall{0};                   ///< synchronous host wall time of the same call
  std::optional<std::uint32_t> timed_stream;  ///< CUPTI id of the stream the events were on
};

/** Rule 10 and invariants 1, 2, 11 on one forward:
 *  - `work_outside_timed_stream` (warning): kernels or copies ran on a stream other than the timed
 *    one. Their time is covered only if that stream was joined back into the timed one; invariant 2
 *    below catches the case where it was not.
 *  - invariant 2 (`kernels_outside_timed_region`, `event_exceeds_wall`): the event time is compared
 *    with the kernels' busy time (their union), not their sum: kernels that overlap on several
 *    streams legitimately sum to more than the wall-clock time they took.
 *  - invariant 11 (`no_kernel_launched`), invariant 1 (`impossible_kernel_time` for each kernel,
 *    `faster_than_launches` / `very_fast_forward` on the event time).
 *  - `cupti_records_dropped` (error): counts are lower bounds; `kernel_untimed` (info). */
[[nodiscard]] std::vector<flag> check_launch_summary(const activity_records& records,
                                                     const launch_summary& summary,
                                                     const timed_forward& timing);

/** summarize_launches() kept only when check_launch_summary() raises no error. */
[[nodiscard]] checked<launch_summary> checked_launches(const activity_records& records,
                                                       const timed_forward& timing);

/** Fusion ratio = reference launches / candidate launches (2.8 for the seed's 14 vs 5). Missing
 *  (`no_data`) when either side launched no kernel. */
[[nodiscard]] checked<double> fusion_ratio(std::uint64_t reference_launches,
                                           std::uint64_t candidate_launches);
/** The same from both sides' checked launch summaries: missing (`no_data`) as well when either
 *  side's summary failed its check (its counts are not trusted). */
[[nodiscard]] checked<double> fusion_ratio(const checked<launch_summary>& reference,
                                           const checked<launch_summary>& candidate);

/** Memory figures around one forward, as the caller measured them (rule 18). Absent: not
 *  measured. Allocator figures are PyTorch's caching allocator statistics
 *  (torch.cuda.reset_peak_memory_stats() before the forward, then max_memory_allocated() and
 *  memory_reserved()); device figures are cudaMemGetInfo's free bytes. */
struct memory_sample {
  std::optional<std::uint64_t> allocator_baseline_bytes;  ///< allocated bytes at the reset
  std::optional<std::uint64_t> allocator_peak_bytes;      ///< peak allocated bytes since the reset
  /** The bytes the forward allocated through the allocator, all its allocations together (freed
   *  or not): under the outputs' bytes, the outputs were not all allocated by this forward (a
   *  buffer it keeps, a view of an input), and invariant 10's lower bound does not hold. */
  std::optional<std::uint64_t> allocator_allocated_bytes;
  /** Growth of the allocator's reserved bytes during the forward: it already shows in the device
   *  free-memory delta and must not be counted twice. 0 when unknown. */
  std::uint64_t allocator_reserved_growth_bytes = 0;
  std::optional<std::uint64_t> device_free_before_bytes;  ///< cudaMemGetInfo before the forward
  /** cudaMemGetInfo at the forward's lowest point (or after it, which misses memory freed again
   *  before it returned). */
  std::optional<std::uint64_t> device_free_after_bytes;
  std::uint64_t output_bytes = 0;         ///< bytes of all outputs (invariant 10, lower bound)
  std::uint64_t device_memory_bytes = 0;  ///< the device's total memory (upper bound; 0: unknown)
};

/** Peak memory of a forward over its baseline, and its two parts. */
struct peak_memory {
  std::uint64_t bytes = 0;            ///< allocator_bytes + raw_bytes
  std::uint64_t allocator_bytes = 0;  ///< allocator peak - baseline
  std::uint64_t raw_bytes = 0;        ///< device memory taken outside the allocator
};

/** Peak over the baseline: allocator peak - baseline, plus raw allocations = the device
 *  free-memory drop not explained by the allocator reserving more. Checked by invariant 10
 *  (>= output bytes, <= device memory); an allocator peak below its baseline is an error
 *  (`allocator_peak_below_baseline`); missing (`no_data`) when neither figure was measured. */
[[nodiscard]] checked<peak_memory> measure_peak_memory(const memory_sample& sample);

}  // namespace kj::profile
