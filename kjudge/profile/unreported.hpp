#pragma once
/** @file Counters ncu did not report: a column its table lacks (counter_source::missing_metrics)
 *  or a value a kernel's row leaves empty (kernel_metrics::unreported_metrics). The parser leaves
 *  such a counter at 0, which derive() cannot tell from a measured 0: it would give a DRAM
 * bandwidth from the write bytes alone, 0 FLOP/s, a 0% hit rate, or fail an invariant on the 0. So
 * every figure computed from one is replaced with a `no_data` metric whose reason names it, and the
 * report carries one `ncu_metrics_missing` warning. The names are ncu_csv.hpp's ncu_metric
 * constants, which the parser's table reads (a fallback column stands in under the primary name).
 *  tests/unit/profile/recorded_profile_test.cpp removes each of them in turn from a real capture
 *  and checks that no figure then shows a number other than the one of the full capture. */

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/profile/ceilings.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/derive.hpp>
#include <kjudge/profile/invariants.hpp>
#include <kjudge/profile/ncu_csv.hpp>

namespace kj::profile {

using metric_names = std::vector<std::string_view>;

/** The counters a sum of DRAM bytes (kernel_metrics::dram_bytes()) needs. */
inline const metric_names dram_byte_metrics{ncu_metric::dram_read, ncu_metric::dram_write};

/** The counters of every FLOP type (what total_flop() sums). */
[[nodiscard]] metric_names all_flop_metrics();

/** Those of `inputs` that ncu did not report, each once, in the order of `inputs`. */
[[nodiscard]] metric_names unreported_among(const std::vector<std::string>& unreported,
                                            const metric_names& inputs);

/** Replaces `m` with a `no_data` metric naming the columns of `inputs` ncu did not report; false
 *  (and `m` unchanged) when it reported them all. */
template <class T>
bool withhold(checked<T>& m, std::string_view what, const std::vector<std::string>& unreported,
              const metric_names& inputs) {
  const metric_names absent = unreported_among(unreported, inputs);
  if (absent.empty()) return false;
  m = checked<T>::missing(fmt::format("{}: ncu did not report {}", what, fmt::join(absent, ", ")));
  return true;
}

/** Withholds every figure of `d` that needs a counter ncu did not report. `total`: `d` is derived
 *  from aggregate(), whose percentages (theoretical occupancy, the SOL figures) are weighted by
 *  kernel duration, so they need the duration too. The largest memory and compute throughputs are
 *  withheld when a part of them that has a roof is (derive() leaves a part without a roof out
 *  anyway), unless they already failed a check; the class is then taken again from them. A broken
 *  duration still outranks a missing counter, as in derive(). */
void withhold_unreported(derived_metrics& d, const std::vector<std::string>& unreported,
                         const ceilings& roofs, bool total);

/** The report's `ncu_metrics_missing` warning: how many, the first few by name, what it means. */
[[nodiscard]] flag missing_metrics_flag(const std::vector<std::string>& unreported);

/** Adds each of `more` not yet in `to` (order kept). */
void add_unreported(std::vector<std::string>& to, const std::vector<std::string>& more);

/** Whether ncu reported every one of `metrics` for `k` (kernel_metrics::unreported_metrics). */
[[nodiscard]] bool all_reported(const kernel_metrics& k, const metric_names& metrics);

/** k's DRAM bytes (read + write) formatted, or "n/a" when ncu did not report both counters. */
[[nodiscard]] std::string dram_bytes_text(const kernel_metrics& k);

/** A kernel's `ncu_values_missing` warning: the metrics whose value its row left empty. */
[[nodiscard]] flag values_missing_flag(const std::vector<std::string>& empty_values);

}  // namespace kj::profile
