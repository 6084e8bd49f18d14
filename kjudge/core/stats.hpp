#pragma once
/** @file Sample statistics for timing: robust centre and spread, the relative standard error used
 *  by the stopping rule, and a bootstrap confidence interval for a ratio of medians. Values are in
 *  whatever unit the caller passes (the timing engine passes microseconds). */

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace kj::stats {

/** Summary of one figure's samples. All values share the unit of the input samples. */
struct summary {
  std::size_t n = 0;
  double median = 0;
  double q1 = 0;  ///< 25th percentile (linear interpolation between order statistics)
  double q3 = 0;  ///< 75th percentile
  double mean = 0;
  /** Sample standard deviation (n - 1); NaN for one sample (0 for none: an empty summary). */
  double stddev = 0;
  double min = 0;
  double max = 0;
  /** Relative standard error of the median, in percent: the larger of 1.2533 * sigma / sqrt(n)
   *  (sigma estimated robustly as 1.4826 * MAD) and the half-width of the median's
   *  distribution-free 95% interval (median_interval_ranks) over the normal quantile of its
   *  coverage (which sees samples in two modes, and a MAD of 0 where more than half the samples
   *  tie), over the median. Infinite when n < 2 (nothing is
   *  known of the spread). The samples taken as independent: a timing figure replaces it with
   *  the larger of this and the error over its input sets (median_rse_by_group). */
  double rse_pct = 0;
};

/** The median's distribution-free interval of n >= 2 samples: the 1-based order statistics l and
 *  u = n + 1 - l, l the largest rank with P(B < l) <= 0.025 for B ~ Binomial(n, 1/2) (so the
 *  interval covers the median with at least 95% probability; l = 1 where no rank reaches it,
 *  n < 6), and z, the standard normal quantile of its exact coverage 1 - 2 P(B < l): half its
 *  width over z estimates the median's standard error. */
struct median_ranks {
  std::size_t l = 1;
  std::size_t u = 1;
  double z = 0;
};
[[nodiscard]] median_ranks median_interval_ranks(std::size_t n);

/** Quantile q in [0, 1] of already sorted values (type-7 linear interpolation). Precondition:
 *  sorted is non-empty. */
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);

[[nodiscard]] double median(std::span<const double> values);

/** Summary of the samples; an empty input gives a zero summary with n = 0. */
[[nodiscard]] summary summarize(std::span<const double> samples);

/** Relative standard error of the median in percent (see summary::rse_pct). */
[[nodiscard]] double median_rse_pct(std::span<const double> samples);

/** The fewest groups with samples for a statistic to resample whole groups
 *  (median_rse_by_group, bootstrap_ratio_of_medians_by_group): with fewer, whole-group resamples
 *  say too little about the spread. */
inline constexpr std::size_t min_bootstrap_groups = 4;

/** The relative standard error of the median of samples that come in groups whose members move
 *  together (a timing figure's input sets: where a set's buffers lie, and its data, shift every
 *  sample taken on it), in percent. */
struct grouped_rse {
  /** The larger of the two below: what the median of another run, on other groups, could read. */
  double total_pct = 0;
  /** median_rse_pct(): the samples taken as independent. Shrinks as samples are added. */
  double samples_pct = 0;
  /** The standard deviation of the median over resamples of whole groups (as many as have
   *  samples, drawn with replacement; times sqrt(G / (G - 1)), the bootstrap's shortfall with G
   *  groups), over the median: the groups' own differences, which more samples of the same groups
   *  do not narrow. NaN when fewer than min_bootstrap_groups groups have samples or the lengths
   *  differ (total_pct is then samples_pct). */
  double groups_pct = 0;
};

/** grouped_rse of `values`, `group_of[i]` being the group of values[i]; deterministic for a given
 *  seed. Sorts the samples and each group's (O(n log n)), then costs
 *  O(resamples * groups * log(n)^2): at -O2, 3 ms for 10,000 samples in 8 groups, 26 ms for
 *  100,000 in 32. The groups are resampled only when samples_pct is under `resample_below` (a
 *  stopping rule's target, which a larger samples_pct fails whatever the groups say); otherwise
 *  groups_pct is NaN. */
[[nodiscard]] grouped_rse median_rse_by_group(
    std::span<const double> values, std::span<const std::uint32_t> group_of,
    std::size_t resamples = 200, double resample_below = std::numeric_limits<double>::infinity(),
    std::uint64_t seed = 0x72736567ULL);

/** Ratio of medians numerator / denominator with a percentile-bootstrap confidence interval. */
struct ratio_ci {
  double ratio = 0;
  double lo = 0;
  double hi = 0;
  double confidence = 0.95;
  std::size_t resamples = 0;
  /** The resamples drew whole groups of samples (bootstrap_ratio_of_medians_by_group), not
   *  single samples. */
  bool by_group = false;
  /** Widened to cover a t interval over processes' ratios (eval::combine_runs). */
  bool by_process = false;
};

/** Resamples each side independently with replacement (deterministic for a given seed). When
 *  either side is empty or a median is 0, returns ratio = lo = hi = 0. */
[[nodiscard]] ratio_ci bootstrap_ratio_of_medians(std::span<const double> numerator,
                                                  std::span<const double> denominator,
                                                  std::size_t resamples = 2000,
                                                  double confidence = 0.95,
                                                  std::uint64_t seed = 0x6b6a75646765ULL);

/** As bootstrap_ratio_of_medians, for samples that come in groups whose members move together
 *  (a timing figure's input sets: where a set's buffers lie, and its data, shift every sample
 *  taken on it): each resample draws as many groups as a side has (those with samples), with
 *  replacement, and takes the median of all their samples; the interval then covers what a run
 *  on other groups would read, not only the sampling noise within these. Each side's resampled
 *  medians are moved away from its median by sqrt(G / (G - 1)) on the log scale (G its groups),
 *  the bootstrap's shortfall with few groups, as grouped_rse's error is scaled: in
 *  bench/ci_coverage.py's simulation with sets alike (4000 evaluations), the 95% interval covered
 *  the true ratio in 86.5% of evaluations over four sets unwidened and 89.8% widened (92.5% and
 *  93.4% over eight). `numerator_groups[i]`
 *  is the group of numerator[i] (likewise for the denominator). Resamples by sample instead
 *  (`by_group` false), as bootstrap_ratio_of_medians with the same seed, when a group array's
 *  length differs from its samples' or either side has fewer than min_bootstrap_groups groups.
 *  Costs O(groups * log(n)^2) per resample. */
[[nodiscard]] ratio_ci bootstrap_ratio_of_medians_by_group(
    std::span<const double> numerator, std::span<const std::uint32_t> numerator_groups,
    std::span<const double> denominator, std::span<const std::uint32_t> denominator_groups,
    std::size_t resamples = 2000, double confidence = 0.95, std::uint64_t seed = 0x6b6a75646765ULL);

/** The p-quantile (0 < p < 1) of Student's t distribution with `df` >= 1 degrees of freedom:
 *  the CDF integrated numerically (Simpson's rule with t = tan(theta)) and inverted by bisection.
 *  The bisection stops at a width of 1e-7 of the value: within about 1e-7 of it, relatively,
 *  for integer df and p up to 0.9995 (df = 1, p = 0.9995: 636.6 within 2e-5). df above 1e5 is
 *  taken as 1e5 (within about 3e-5 of the normal quantile at p = 0.975, 1e-4 at 0.9995); less
 *  accurate far in the tail for df between 1 and 2. NaN for p outside (0, 1) or df < 1. */
[[nodiscard]] double student_t_quantile(double p, double df);

/** The median of each group's values, for groups 0 .. `groups` - 1 (NaN for a group without
 *  values; values whose group is `groups` or above are left out). `group_of[i]` is the group of
 *  values[i]; empty when the lengths differ. */
[[nodiscard]] std::vector<double> group_medians(std::span<const double> values,
                                                std::span<const std::uint32_t> group_of,
                                                std::size_t groups);

}  // namespace kj::stats
