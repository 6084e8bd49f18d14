#pragma once
/** @file Sanity checks on timing figures before they are shown (measurement.md, invariants 1, 2,
 *  9 and 12). A failure becomes a flag with the reason. */

#include <cstdint>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/cuda/probe.hpp>

namespace kj::eval {

/** Theoretical DRAM bandwidth in bytes/s from the memory clock and bus width (DDR: x2), or 0. */
[[nodiscard]] double dram_peak_bytes_per_s(const cuda::device_properties& d) noexcept;

/** `min_bytes`: the fewest bytes the candidate must move (inputs once + outputs once). `device`
 *  may be null (CPU runs). */
[[nodiscard]] std::vector<flag> check_timing(const measure::comparison& c,
                                             const cuda::device_properties* device,
                                             std::uint64_t min_bytes);

}  // namespace kj::eval
