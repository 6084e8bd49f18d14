#pragma once
/** @file From raw measurements to ceilings that may be shown: every figure passes the invariants of
 *  docs/measurement-rules.md (rule 19: a timed launch of at least 1 ms; rule 20: several
 *  repetitions; invariant 6: measured <= datasheet peak; invariant 7: L1/shared >= L2 >= DRAM;
 *  invariant 8: FLOP/s <= the dense peak), or it becomes a flag and has no number. Ridge points are
 *  derived from passing ceilings only. Pure: no GPU needed. */

#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/device/datasheet.hpp>
#include <kjudge/profile/ceilings.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/roofline/result.hpp>

namespace kj::roofline {

/** Rule 19: the shortest timed launch a bandwidth or compute figure may come from. */
inline constexpr double min_launch_ms = 1.0;
/** Rule 20: fewer repetitions than this give a warning (the best of too few is not a ceiling). */
inline constexpr std::size_t min_repetitions = 5;

/** The ceilings of one result, each a number that passed its checks or the flag that says why
 *  not. Units in the names; ridge points in FLOP per DRAM byte. */
struct checked_roofline {
  profile::checked<double> dram_tbps;  ///< the best of DRAM read, write and copy
  profile::checked<double> dram_read_tbps, dram_write_tbps, dram_copy_tbps;
  profile::checked<double> l2_tbps;
  profile::checked<double> l1_tbps;         ///< shared-memory reads, aggregate over all SMs
  profile::checked<double> l1_per_sm_tbps;  ///< l1_tbps / SMs
  profile::checked<double> fp32_tflops, fp64_tflops;
  profile::checked<double> fp16_tensor_tflops, bf16_tensor_tflops;
  profile::checked<double> launch_stream_us;         ///< host-issued: bounded by the host's rate
  profile::checked<double> launch_stream_queued_us;  ///< queued behind the blocking kernel: GPU
  profile::checked<double> launch_graph_us, round_trip_us;
  profile::checked<double> fp32_ridge_flop_per_byte;  ///< FP32 FLOP/s / DRAM bytes/s
  profile::checked<double> bf16_ridge_flop_per_byte;  ///< BF16 tensor FLOP/s / DRAM bytes/s
  /** The roofs for `kjudge profile`: passing measured ceilings (bytes/s, FLOP/s; 0 where a
   *  figure failed) and the datasheet peaks of the GPU when kjudge's table knows it. */
  profile::ceilings ceilings;
  const device::datasheet_entry* datasheet = nullptr;  ///< nullptr: no entry for this GPU
  std::vector<flag> flags;  ///< every flag raised, measurement notes included

  [[nodiscard]] bool has_error() const noexcept { return profile::has_error(flags); }
};

/** Checks `r` against the datasheet row of its GPU (looked up by name; nullptr skips the
 *  datasheet comparisons) and derives the ridge points. Never throws for bad figures. */
[[nodiscard]] checked_roofline check_roofline(const roofline_result& r,
                                              const device::datasheet_entry* datasheet);
/** As above, with the datasheet row found by r.gpu.name. */
[[nodiscard]] checked_roofline check_roofline(const roofline_result& r);

/** FLOP/s over bytes/s: the arithmetic intensity (FLOP/byte) at which a kernel stops being
 *  memory-bound. 0 when either is not positive. */
[[nodiscard]] double ridge_flop_per_byte(double flop_per_s, double bytes_per_s) noexcept;

/** The JSON "ceilings" object: each checked figure as {"value": x} or {"value": null, "flags"},
 *  under its unit-suffixed name. */
[[nodiscard]] nlohmann::json to_json(const checked_roofline& c);

}  // namespace kj::roofline
