#pragma once
/** @file The roofs a kernel is judged against: per memory level, the bandwidth the roofline
 *  microbenchmarks measured and the datasheet peak; per floating-point type, the measured rate and
 *  the DENSE datasheet peak (rule 15: never the "with sparsity" figure). 0 means unknown. Units:
 *  bytes/s and FLOP/s (not GB/s or TFLOP/s), so no conversion factor hides in a comparison. */

#include <array>
#include <cstdint>

#include <kjudge/profile/kernel_metrics.hpp>

namespace kj::profile {

/** One memory level. */
struct bandwidth_ceiling {
  double measured_bytes_per_s = 0;   ///< best of several >= 1 ms microbenchmark runs (rule 19-20)
  double datasheet_bytes_per_s = 0;  ///< the vendor's figure; usually only DRAM has one
  std::uint64_t working_set_bytes = 0;  ///< of the measurement, so a reader can judge the level

  /** The roof that throughput percentages are taken against: the datasheet peak when known (as
   *  Nsight Compute does), else the measured ceiling; 0 when neither is known. */
  [[nodiscard]] double roof() const noexcept {
    return datasheet_bytes_per_s > 0 ? datasheet_bytes_per_s : measured_bytes_per_s;
  }
};

/** One floating-point pipe and datatype. */
struct compute_ceiling {
  double measured_flop_per_s = 0;
  double datasheet_dense_flop_per_s = 0;  ///< dense: a sparse figure here is a defect (flagged)

  /** Datasheet dense peak when known, else the measured rate; 0 when neither is known. */
  [[nodiscard]] double roof() const noexcept {
    return datasheet_dense_flop_per_s > 0 ? datasheet_dense_flop_per_s : measured_flop_per_s;
  }
};

/** All roofs of one device. */
struct ceilings {
  bandwidth_ceiling l1;  ///< L1 / shared memory, aggregate over all SMs
  bandwidth_ceiling l2;
  bandwidth_ceiling dram;
  std::array<compute_ceiling, flop_type_count> compute{};  ///< indexed by flop_type

  [[nodiscard]] const compute_ceiling& at(flop_type t) const noexcept {
    return compute[static_cast<std::size_t>(t)];
  }
  [[nodiscard]] compute_ceiling& at(flop_type t) noexcept {
    return compute[static_cast<std::size_t>(t)];
  }
};

}  // namespace kj::profile
