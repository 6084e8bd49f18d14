#pragma once
/** @file Totals over several kernels (one forward, or one kernel over several launches) by the
 *  rules of docs/measurement-rules.md: counts (bytes, sectors, requests, instructions, cycles,
 *  FLOP) are summed and every ratio is recomputed from the sums (rule 13); percentages that exist
 *  only per kernel are weighted by kernel duration; warp stalls become shares of all stall cycles
 *  that sum to 100, and, separately, stall cycles per issued instruction (rule 14). Never adds
 *  percentages or ratios. */

#include <map>
#include <optional>
#include <span>
#include <string>

#include <kjudge/profile/kernel_metrics.hpp>

namespace kj::profile {

/** The kernels as one: every count summed, durations summed, elapsed cycles summed (kernels of
 *  one forward run one after another), the `_pct` fields weighted by duration over the kernels
 *  that report them (absent when none does). Launch shape fields (grid, block, registers, shared
 *  memory) describe one launch and are left 0 in the total. `name` is "total", `demangled_name`
 *  "N kernels". Throws kj::error (usage) when the kernels come from devices with different SM
 *  counts or warp limits: their cycles cannot be added. An empty span gives an all-zero total. */
[[nodiscard]] kernel_metrics aggregate(std::span<const kernel_metrics> kernels);

/** Duration-weighted mean of one `_pct` field over the kernels that report it; absent when none
 *  does or their durations sum to 0. */
[[nodiscard]] std::optional<double> duration_weighted_pct(
    std::span<const kernel_metrics> kernels, std::optional<double> kernel_metrics::*field);

/** Warp stalls of one kernel or of a total. */
struct stall_breakdown {
  double total_stall_cycles = 0;  ///< sum over reasons, warp-cycles
  double instructions_issued = 0;
  /** reason -> % of total_stall_cycles; sums to 100 (empty when no stall cycles). */
  std::map<std::string, double> share_pct;
  /** reason -> stall cycles per issued instruction: a ratio, NOT a percentage, and it does not
   *  sum to anything fixed (empty when no instructions were issued). */
  std::map<std::string, double> cycles_per_issued_instruction;
};

/** Shares and per-instruction ratios from stall cycles (kernel_metrics::stall_cycles). */
[[nodiscard]] stall_breakdown break_down_stalls(const std::map<std::string, double>& stall_cycles,
                                                double instructions_issued);
/** Same, for one kernel or a total from aggregate(). */
[[nodiscard]] stall_breakdown break_down_stalls(const kernel_metrics& k);

}  // namespace kj::profile
