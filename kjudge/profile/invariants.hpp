#pragma once
/** @file The invariants of docs/measurement-rules.md that apply to counters, ceilings and a
 *  forward's device records (table rows 1-8, 10, 11). Each check returns the flags it raises
 *  (empty: it holds); a flag's message carries the numbers and the reason. Wrap a metric with
 *  check_metric() (see checked.hpp) so that a metric whose check fails is reported as its flag,
 *  never as a number. Flag codes are listed in docs/profile-metrics.md. Every check is pure and
 *  never throws. */

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/core/units.hpp>
#include <kjudge/profile/ceilings.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/kernel_metrics.hpp>

namespace kj::profile {

/** Invariant 3: slack, in percentage points, for rounding in percentages the profiler prints. */
inline constexpr double percentage_slack_pct = 0.05;
/** A hit rate up to this (%) is counters of different ncu replay passes disagreeing (a warning,
 *  no number); above it the counters are broken (an error). The H200 sweep saw 101.2%. */
inline constexpr double hit_rate_noise_pct = 110.0;
/** Invariant 4: stall shares must sum to 100 within this many percentage points. */
inline constexpr double stall_share_sum_tolerance_pct = 1.0;
/** Invariant 5: a warp-wide global load touches at least one and at most 32 sectors. */
inline constexpr double min_sectors_per_request = 1.0;
inline constexpr double max_sectors_per_request = 32.0;
/** Invariant 6: achieved bandwidth may exceed the measured ceiling by this factor (the ceiling is a
 *  best-of-N measurement, not a hardware limit); never the datasheet peak. */
inline constexpr double measured_ceiling_tolerance = 1.05;
/** Invariant 1: no kernel takes less than this on the device. */
inline constexpr double min_kernel_time_ns = 500.0;
/** Invariant 1: an eager forward needs at least this much per kernel launch. */
inline constexpr double min_time_per_launch_ns = 1000.0;
/** Invariant 1: a forward under this is shown, with an info flag asking for review. */
inline constexpr double review_time_ns = 2000.0;
/** Invariant 2: the event time must cover at least this fraction of the kernels' summed time. */
inline constexpr double event_covers_kernels_fraction = 0.9;
/** A measured compute rate under this fraction of the datasheet "dense" peak suggests the peak is
 *  the sparse figure (2x dense); measured rates on random data reach ~80% of the dense peak. */
inline constexpr double sparse_suspect_fraction = 0.5;
/** A peak used as dense more than this factor above the datasheet's dense peak is flagged. */
inline constexpr double dense_peak_tolerance = 1.05;

/** Invariant 3: `pct` within [0, 100] (`what` names it in the message). */
[[nodiscard]] std::vector<flag> check_percentage(std::string_view what, double pct);

/** Invariant 4 (and 3 for each share): stall shares, reason -> % of all stall cycles, each in
 *  [0, 100] and summing to 100 +- 1. An empty map (no stalls recorded) passes. */
[[nodiscard]] std::vector<flag> check_stall_shares(const std::map<std::string, double>& share_pct);

/** Invariant 5: global-load sectors per request within [1, 32]. Global stores pass
 *  `lowest` = 0: they have only the upper bound, since ncu counts store requests that write no
 *  sector (0.99 sectors per request was recorded on the H200 for PyTorch's reduce_kernel, whose
 *  final store is made by one lane of the block). */
[[nodiscard]] std::vector<flag> check_sectors_per_request(std::string_view what,
                                                          double sectors_per_request,
                                                          double lowest = min_sectors_per_request);

/** Invariant 6, achieved side: `achieved` <= 1.05 x the measured ceiling and <= the datasheet
 *  peak (each when known). `level`: "DRAM", "L2", "L1/shared". */
[[nodiscard]] std::vector<flag> check_bandwidth(std::string_view level, double achieved_bytes_per_s,
                                                const bandwidth_ceiling& ceiling);

/** Invariant 6, ceiling side: the measured ceiling <= the datasheet peak (when both known). */
[[nodiscard]] std::vector<flag> check_bandwidth_ceiling(std::string_view level,
                                                        const bandwidth_ceiling& ceiling);

/** Invariant 7: measured ceilings ordered L1/shared >= L2 >= DRAM (pairs where both are known).
 */
[[nodiscard]] std::vector<flag> check_ceiling_order(const ceilings& c);

/** Invariant 8: achieved FLOP/s of one type <= its dense datasheet peak (or, when only a measured
 *  rate is known, <= 1.05 x that). */
[[nodiscard]] std::vector<flag> check_flop_rate(flop_type type, double achieved_flop_per_s,
                                                const compute_ceiling& ceiling);

/** Rule 15 / invariant 8, ceiling side: measured rate <= datasheet dense peak; a measured rate
 *  under half the "dense" peak is flagged as a probable sparse figure (warning). */
[[nodiscard]] std::vector<flag> check_compute_ceiling(flop_type type,
                                                      const compute_ceiling& ceiling);

/** Rule 15: the peak in use for `type` is no more than 1.05 x the dense peak from the device's
 *  datasheet (kj::device); the "with sparsity" figure is twice that. Skipped when either is 0. */
[[nodiscard]] std::vector<flag> check_dense_peak(flop_type type, double used_peak_flop_per_s,
                                                 double datasheet_dense_flop_per_s);

/** All ceiling-side checks: 6 for each level, 7, and the compute checks for each type. */
[[nodiscard]] std::vector<flag> check_ceilings(const ceilings& c);

/** Invariant 10: peak memory >= the outputs' bytes and <= the device's memory (when known). */
[[nodiscard]] std::vector<flag> check_peak_memory(std::uint64_t peak_bytes,
                                                  std::uint64_t output_bytes,
                                                  std::uint64_t device_memory_bytes);

/** Invariant 11: a CUDA candidate launches at least one kernel (device records; copies and fills
 *  are not kernels). */
[[nodiscard]] std::vector<flag> check_launches(bool cuda_candidate, std::uint64_t kernel_launches,
                                               std::uint64_t memcpy_count = 0,
                                               std::uint64_t memset_count = 0);

/** Invariant 1: one kernel's duration >= 0.5 us. */
[[nodiscard]] std::vector<flag> check_kernel_time(std::string_view kernel, nanoseconds duration);

/** Invariant 1: a forward `figure` ("device", "event") of `launches` kernels launched eagerly is
 *  not under launches x 1 us; any forward under 2 us gets an info flag for review. Skipped when
 *  time is 0 (not measured). */
[[nodiscard]] std::vector<flag> check_forward_time(std::string_view figure, nanoseconds time,
                                                   std::uint64_t launches, bool eager);

/** The code of invariant 2's lower bound: kernels that the events around the forward missed. */
inline constexpr const char* kernels_outside_timed_region_code = "kernels_outside_timed_region";

/** Invariant 2: event time >= 0.9 x the time the forward's kernels ran (their busy time, the
 *  union of their intervals, so that concurrent kernels are not counted twice), and <= host wall.
 *  Each comparison is skipped when one side is 0 (not measured). `includes_host_waits`: the
 *  forward waited for the host while queued, so its event time holds those waits too (an upper
 *  bound of its device time, which the lower bound can still fail: the message says so). */
[[nodiscard]] std::vector<flag> check_event_time(nanoseconds event_time,
                                                 nanoseconds kernel_busy_time,
                                                 nanoseconds host_wall,
                                                 bool includes_host_waits = false);

}  // namespace kj::profile
