#pragma once
/** @file Sanity checks on timing figures before they are shown (docs/measurement-rules.md,
 *  invariants 1, 2, 9 and 12). A failure becomes a flag with the reason. */

#include <cstdint>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/cuda/probe.hpp>

namespace kj::eval {

/** DRAM peak in bytes/s: the larger of the datasheet figure and the one derived from the memory
 *  clock and bus width (DDR: x2); 0 when neither is known. */
[[nodiscard]] double dram_peak_bytes_per_s(const cuda::device_properties& d) noexcept;

/** Checks every figure; one that fails an invariant is made invalid (its note says why) and
 *  speedups that need it are marked invalid, so no failing number is shown. Returns the flags.
 *  `min_bytes`: the fewest bytes the candidate must move (inputs once + outputs once). `device`
 *  may be null (CPU runs). */
[[nodiscard]] std::vector<flag> check_timing(measure::comparison& c,
                                             const cuda::device_properties* device,
                                             std::uint64_t min_bytes);

}  // namespace kj::eval
