#pragma once
/** @file Derived metrics of one kernel (or of a total from aggregate()): achieved bandwidth per
 *  level, hit rates, sectors per request, occupancy, FLOP/s per type, arithmetic intensity,
 *  throughput as % of a roof, warp-stall shares, and the bottleneck class by the 60% rule
 *  (docs/measurement-rules.md, rules 13-16). Every metric is a checked<>: the number only when its
 *  invariant holds, else the flag that says why not. Formulas: docs/profile-metrics.md. */

#include <array>
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

/** Bytes in one L1/L2 sector. */
inline constexpr double sector_bytes = 32.0;
/** Rule 16: a kernel is compute- or memory-bound only when that throughput reaches this % of its
 *  roof. Below it on both, the kernel is latency-bound: neither unit is busy, warps wait. */
inline constexpr double bound_threshold_pct = 60.0;
/** Rule 16: a forward is launch-bound when its kernels together are busy for less than this
 *  fraction of its device time, i.e. gaps between kernels (launch latency, host work between
 *  launches) take more than half of it; no kernel optimisation can then win much. */
inline constexpr double launch_bound_busy_fraction = 0.5;

/** What limits a kernel or a forward. */
enum class bottleneck {
  compute_bound,  ///< compute throughput >= 60% of its roof (and above the memory throughput)
  memory_bound,   ///< memory throughput >= 60% of its roof (and above the compute throughput)
  latency_bound,  ///< both under 60%
  launch_bound,   ///< kernels busy < 50% of the forward's device time (forwards only)
  unknown,        ///< a throughput is missing or failed its check
};

/** "compute-bound", "memory-bound", "latency-bound", "launch-bound", "unknown". */
[[nodiscard]] std::string_view to_string(bottleneck b) noexcept;

/** A class with the numbers behind it. */
struct classification {
  bottleneck bound = bottleneck::unknown;
  std::string reason;  ///< "compute 16.7% and memory 4.2% of their roofs, both under 60%"
};

/** The 60% rule on two throughputs, each in % of its roof. Both >= 60: the larger wins. */
[[nodiscard]] bottleneck classify(double compute_throughput_pct,
                                  double memory_throughput_pct) noexcept;

/** The 60% rule on checked throughputs. A failed (error) throughput gives `unknown`; a missing
 *  one gives `unknown` unless the other reaches 60% by itself. */
[[nodiscard]] classification classify(const checked<double>& compute_throughput_pct,
                                      const checked<double>& memory_throughput_pct);

/** True when the kernels' summed time is under 50% of the forward's device time. False when the
 *  device time is unknown (<= 0). */
[[nodiscard]] bool launch_gaps_dominate(nanoseconds kernel_time_sum,
                                        nanoseconds forward_device_time) noexcept;

/** Every derived metric of one kernel or total. Units are in the names; `_pct` is % of a whole. */
struct derived_metrics {
  /** The duration every rate divides by, checked by invariant 1 (>= 0.5 us). When it fails, every
   *  metric computed from it fails with the same flag (withhold_timed). */
  checked<double> duration_ns;
  checked<double> dram_bytes_per_s;  ///< (read + write bytes) / duration
  checked<double> l2_bytes_per_s;    ///< L2 sectors x 32 / duration
  checked<double> l1_bytes_per_s;    ///< L1 sectors x 32 / duration
  checked<double> l1_hit_rate_pct;   ///< 100 x hit sectors / sectors
  checked<double> l2_hit_rate_pct;
  checked<double> global_load_sectors_per_request;  ///< sectors / requests, in [1, 32]
  checked<double> global_store_sectors_per_request;
  checked<double> achieved_occupancy_pct;     ///< 100 x warps_active / active cycles / max warps
  checked<double> theoretical_occupancy_pct;  ///< as ncu gives it, checked
  checked<double> sm_busy_pct;     ///< 100 x SM active cycles / (elapsed cycles x SM count)
  checked<double> sm_sol_pct;      ///< ncu's SM throughput (% of peak), checked
  checked<double> memory_sol_pct;  ///< ncu's memory throughput (% of peak), checked
  std::array<checked<double>, flop_type_count> flop_per_s;  ///< indexed by flop_type
  checked<double> arithmetic_intensity_flop_per_byte;       ///< all FLOP / DRAM bytes
  checked<double>
      dram_throughput_pct;  ///< achieved / roof (ceilings.hpp: datasheet, else measured)
  checked<double> l2_throughput_pct;
  checked<double> l1_throughput_pct;
  std::array<checked<double>, flop_type_count> flop_throughput_pct;  ///< FLOP/s / dense roof
  /** Largest of the level throughputs and ncu's memory SOL %. */
  checked<double> memory_throughput_pct;
  /** Largest of the FLOP throughputs and ncu's SM SOL %. */
  checked<double> compute_throughput_pct;
  /** reason -> % of all stall cycles, summing to 100. */
  checked<std::map<std::string, double>> stall_share_pct;
  /** reason -> stall cycles per issued instruction (a ratio, never shown as a %). */
  checked<std::map<std::string, double>> stall_cycles_per_issued_instruction;
  classification bound;

  [[nodiscard]] const checked<double>& flops(flop_type t) const noexcept {
    return flop_per_s[static_cast<std::size_t>(t)];
  }
  [[nodiscard]] const checked<double>& flop_pct(flop_type t) const noexcept {
    return flop_throughput_pct[static_cast<std::size_t>(t)];
  }
  /** Every flag of every metric except `no_data`, each once, in field order. */
  [[nodiscard]] std::vector<flag> flags() const;
};

/** Replaces every metric computed from the duration (rates, throughputs, the bound) and the
 *  duration itself with `broken` (a failed duration check), so no rate of a broken time is shown.
 *  For a total whose kernels include one with a broken time. */
void withhold_timed(derived_metrics& d, const checked<double>& broken);

/** Derives every metric of `k` against `c`. Never throws; a metric without its inputs is
 *  `no_data`, one that breaks an invariant carries the invariant's flag instead of a number. */
[[nodiscard]] derived_metrics derive(const kernel_metrics& k, const ceilings& c);

/** The class of a whole forward: launch-bound when its kernels ran less than half of its device
 *  time (launch gaps dominate), else `kernels_bound`, the class of the total of its kernels. */
[[nodiscard]] classification classify_forward(nanoseconds kernel_time_sum,
                                              nanoseconds forward_device_time,
                                              const classification& kernels_bound);

}  // namespace kj::profile
