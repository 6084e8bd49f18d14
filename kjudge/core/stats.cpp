#include <kjudge/core/stats.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>

#include <kjudge/core/error.hpp>

namespace kj::stats {

namespace {

// Scale factors of the robust spread estimate (see summary::rse_pct): 1.4826 * MAD estimates the
// standard deviation of a normal sample; 1.2533 = sqrt(pi / 2) is the asymptotic standard error
// of the median relative to that of the mean.
constexpr double mad_to_sigma = 1.4826;
constexpr double median_se_factor = 1.2533;

double mean_of(std::span<const double> v) noexcept {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sample_stddev(std::span<const double> v, double mean) noexcept {
  if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();  // undefined: n - 1 = 0
  double ss = 0.0;
  for (const double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

/** The standard normal's p-quantile, 0 < p < 1 (bisection on erfc, to 1e-12). */
double normal_quantile(double p) {
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::numbers::sqrt2) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

median_ranks median_interval_ranks(std::size_t n) {
  if (n < 2) return {1, n, 0.0};
  // P(B <= k) for B ~ Binomial(n, 1/2), its terms formed in logs (2^-n underflows past
  // n = 1074): l is one past the largest k with P(B <= k) <= 0.025 (the extremes, l = 1, where
  // even P(B = 0) = 2^-n is more: n < 6, an interval of less than 95%).
  const double nd = static_cast<double>(n);
  double log_term = -nd * std::numbers::ln2;  // log P(B = k)
  double cdf = 0.0;                           // P(B <= k)
  double below = std::exp(log_term);          // P(B < l)
  std::size_t l = 1;
  for (std::size_t k = 0; k < n / 2; ++k) {
    cdf += std::exp(log_term);
    if (cdf > 0.025) break;
    below = cdf;
    l = k + 1;
    log_term += std::log((nd - static_cast<double>(k)) / static_cast<double>(k + 1));
  }
  // The interval (x_l, x_u) covers the median with probability 1 - 2 P(B < l) (P(B <= 0) for the
  // extremes): a normal interval of that coverage is z standard errors either side.
  return {l, n + 1 - l, normal_quantile(1.0 - below)};
}

namespace {

/** rse_pct from the sorted samples and their median. */
double rse_pct_sorted(std::span<const double> sorted, double med) {
  const std::size_t n = sorted.size();
  // One sample (or none) says nothing of the spread: not "0% error".
  if (n < 2) return std::numeric_limits<double>::infinity();
  std::vector<double> dev(n);
  std::transform(sorted.begin(), sorted.end(), dev.begin(),
                 [med](double x) { return std::abs(x - med); });
  std::sort(dev.begin(), dev.end());
  const double sigma = mad_to_sigma * quantile_sorted(dev, 0.5);
  // The normal-theory error from the MAD sees only the spread of the larger half of the samples:
  // with two modes (55% at 6 us, 45% at 9 us) it is the width of one peak, while the median
  // jumps between the peaks from run to run (a simulation stopped 84% of 20-sample runs at
  // 0.13% with medians 21% apart). The median's distribution-free 95% interval (order statistics
  // l and u, 1-based, around n/2) sees both: the larger of the two is taken. It also covers a
  // MAD of 0 (more than half the samples tie at a timer tick), where the standard deviation,
  // which one outlier dominates, had called a pinned median noisy. Its ranks are the binomial's
  // own, divided by the normal quantile of the coverage they give (the usual n/2 +- 0.98 sqrt(n),
  // rounded outwards, covered 98.8% at n = 20 and overstated the error 1.4 times there).
  const median_ranks r = median_interval_ranks(n);
  const double se = std::max(median_se_factor * sigma / std::sqrt(static_cast<double>(n)),
                             (sorted[r.u - 1] - sorted[r.l - 1]) / (2.0 * r.z));
  if (se == 0.0) return 0.0;
  // A zero centre with a non-zero spread has no finite relative error; saying "infinitely noisy"
  // keeps a stopping rule sampling instead of stopping on a meaningless 0.
  if (med == 0.0) return std::numeric_limits<double>::infinity();
  return 100.0 * se / std::abs(med);
}

// --- Bootstrap sampling -------------------------------------------------------------------------
// A bootstrap resample of n values draws n indices uniformly from the sorted sample; because the
// sorted sample is monotone, the resample's median is sorted[I_(k)] (or the mean of sorted[I_(k)]
// and sorted[I_(k+1)]), where I_(k) is the k-th smallest of the n drawn indices. With
// I = floor(n U) for U uniform on [0, 1), I_(k) = floor(n U_(k)), and the k-th order statistic of
// n uniforms is Beta(k, n + 1 - k). Given U_(k) = u, the remaining n - k uniforms are uniform on
// (u, 1), so U_(k+1) = u + (1 - u) * Beta(1, n - k). Drawing these directly is exact and costs
// O(1) per resample instead of O(n) index draws plus a selection (which took ~0.7 s for 2000
// resamples of 10,000 values).
//
// Uniforms, normals and gammas are derived here from std::mt19937_64 (whose output the standard
// fixes) rather than from std::*_distribution (whose algorithms it does not), so a seed gives the
// same interval with every standard library.

class sampler {
 public:
  explicit sampler(std::uint64_t seed) : m_rng(seed) {}

  /** Uniform on [0, 1) with 53 random bits. */
  double uniform() noexcept { return static_cast<double>(m_rng() >> 11) * 0x1.0p-53; }

  /** Uniform on (0, 1], safe for log(). */
  double uniform_open0() noexcept { return 1.0 - uniform(); }

  /** Standard normal (Box-Muller; the second value is kept for the next call). */
  double normal() noexcept {
    if (m_has_spare) {
      m_has_spare = false;
      return m_spare;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform_open0()));
    const double theta = 2.0 * std::numbers::pi * uniform();
    m_spare = r * std::sin(theta);
    m_has_spare = true;
    return r * std::cos(theta);
  }

  /** Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang, 2000). */
  double gamma(double shape) noexcept {
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double x = normal();
      double v = 1.0 + c * x;
      if (v <= 0.0) continue;
      v = v * v * v;
      const double u = uniform_open0();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

  /** Beta(a, b) for a, b >= 1. */
  double beta(double a, double b) noexcept {
    const double x = gamma(a);
    const double y = gamma(b);
    return x / (x + y);
  }

 private:
  std::mt19937_64 m_rng;
  double m_spare = 0.0;
  bool m_has_spare = false;
};

std::size_t to_index(double u, std::size_t n) noexcept {
  const auto i = static_cast<std::size_t>(u * static_cast<double>(n));
  return std::min(i, n - 1);  // u * n can round up to n when u is within an ulp of 1
}

/** Median of one bootstrap resample of `sorted` (see the comment above). */
double resampled_median(std::span<const double> sorted, sampler& rng) noexcept {
  const std::size_t n = sorted.size();
  if (n == 1) return sorted[0];
  const std::size_t k = (n + 1) / 2;  // 1-based rank of the (lower) middle element
  const double u_k = rng.beta(static_cast<double>(k), static_cast<double>(n + 1 - k));
  const double lower = sorted[to_index(u_k, n)];
  if (n % 2 == 1) return lower;
  const double min_of_rest = 1.0 - std::pow(rng.uniform_open0(), 1.0 / static_cast<double>(n - k));
  const double u_k1 = u_k + (1.0 - u_k) * min_of_rest;
  return 0.5 * (lower + sorted[to_index(u_k1, n)]);
}

/** The values by group, for the groups that have any: `ids` ascending, `values[i]` those of
 *  group ids[i] in their order. */
struct by_group {
  std::vector<std::uint32_t> ids;
  std::vector<std::vector<double>> values;

  by_group(std::span<const double> v, std::span<const std::uint32_t> group_of)
      : ids(group_of.begin(), group_of.end()) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    values.resize(ids.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      values[static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), group_of[i]) -
                                      ids.begin())]
          .push_back(v[i]);
  }
};

/** One side's samples by group, for resampling whole groups (bootstrap_ratio_of_medians_by_group).
 *  The r-th smallest value of a resample (group c drawn counts[c] times) is the smallest value v
 *  of all the samples with sum_c counts[c] * #{x in group c : x <= v} >= r: found by bisection
 *  over all the samples, sorted, each step counting in every group's sorted values. */
class grouped_samples {
 public:
  grouped_samples(std::span<const double> values, std::span<const std::uint32_t> group_of)
      : m_groups(by_group(values, group_of).values) {
    for (auto& g : m_groups) std::sort(g.begin(), g.end());
    m_all.assign(values.begin(), values.end());
    std::sort(m_all.begin(), m_all.end());
    m_counts.resize(m_groups.size());
  }

  [[nodiscard]] std::size_t groups() const noexcept { return m_groups.size(); }

  /** The median of all the samples (as summarize() gives it). */
  [[nodiscard]] double median() const { return m_all.empty() ? 0.0 : quantile_sorted(m_all, 0.5); }

  /** Every sample, sorted. */
  [[nodiscard]] std::span<const double> sorted() const noexcept { return m_all; }

  /** The median of one resample of groups() groups drawn with replacement; groups() > 0. */
  double resampled_median(sampler& rng) {
    KJ_EXPECTS(!m_groups.empty());
    std::fill(m_counts.begin(), m_counts.end(), std::size_t{0});
    std::size_t total = 0;
    for (std::size_t i = 0; i < m_groups.size(); ++i) {
      const std::size_t c = to_index(rng.uniform(), m_groups.size());
      ++m_counts[c];
      total += m_groups[c].size();
    }
    if (total % 2 == 1) return ranked((total + 1) / 2);
    return 0.5 * (ranked(total / 2) + ranked(total / 2 + 1));
  }

 private:
  /** The r-th smallest (1-based) value of the current resample. */
  double ranked(std::size_t r) const {
    std::size_t lo = 0, hi = m_all.size() - 1;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (at_most(m_all[mid]) >= r)
        hi = mid;
      else
        lo = mid + 1;
    }
    return m_all[lo];
  }

  /** How many values of the current resample are <= v. */
  std::size_t at_most(double v) const {
    std::size_t n = 0;
    for (std::size_t c = 0; c < m_groups.size(); ++c)
      if (m_counts[c] > 0)
        n += m_counts[c] *
             static_cast<std::size_t>(std::upper_bound(m_groups[c].begin(), m_groups[c].end(), v) -
                                      m_groups[c].begin());
    return n;
  }

  std::vector<std::vector<double>> m_groups;  ///< sorted values of each group with values
  std::vector<double> m_all;                  ///< every value, sorted
  std::vector<std::size_t> m_counts;          ///< times each group was drawn (this resample)
};

/** sqrt(G / (G - 1)): a bootstrap over G groups drawn with replacement spreads a statistic of
 *  the groups by a factor sqrt((G - 1) / G) less than drawing G new groups would (the plug-in
 *  variance's divisor G, not G - 1): 13% short of the spread with four groups, 7% with eight. */
double group_widening(std::size_t groups) {
  const auto g = static_cast<double>(groups);
  return std::sqrt(g / (g - 1.0));
}

/** A resampled median moved away from the sample's median by `factor` on the log scale
 *  (centre (m / centre)^factor: a ratio of medians spreads evenly in the logarithm, and the
 *  result stays positive); left as it is where either is not positive or finite. */
double widened(double resampled, double centre, double factor) {
  if (!(resampled > 0.0 && centre > 0.0) || !std::isfinite(resampled) || !std::isfinite(centre))
    return resampled;
  return centre * std::pow(resampled / centre, factor);
}

/** The ratio num_med / den_med and its percentile interval (at out.confidence) over
 *  `resamples` ratios of resampled medians, numerator's then denominator's drawn by
 *  `draw(rng, numerator)`; left at 0 when either median is 0. */
template <class Draw>
void fill_interval(double num_med, double den_med, std::size_t resamples, std::uint64_t seed,
                   Draw&& draw, ratio_ci& out) {
  if (num_med == 0.0 || den_med == 0.0) return;
  out.ratio = num_med / den_med;
  out.lo = out.hi = out.ratio;
  sampler rng(seed);
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (std::size_t r = 0; r < resamples; ++r) {
    const double a = draw(rng, true);
    const double b = draw(rng, false);
    const double q = a / b;
    // A resample whose denominator median is 0 reads an unbounded ratio: kept as +inf, so the
    // upper percentile is not biased low by leaving it out; 0 / 0 says nothing and is left out.
    if (!std::isnan(q)) ratios.push_back(q);
  }
  out.resamples = ratios.size();
  if (ratios.empty()) return;
  std::sort(ratios.begin(), ratios.end());
  const double tail = std::clamp((1.0 - out.confidence) / 2.0, 0.0, 0.5);
  out.lo = quantile_sorted(ratios, tail);
  out.hi = quantile_sorted(ratios, 1.0 - tail);
}

}  // namespace

double quantile_sorted(std::span<const double> sorted, double q) {
  KJ_EXPECTS(!sorted.empty());
  q = std::isnan(q) ? 0.5 : std::clamp(q, 0.0, 1.0);  // NaN would make the index undefined
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  const double frac = h - static_cast<double>(lo);
  // Exactly at a value, or between equal ones: that value (0 * (inf - inf) would be NaN).
  if (frac == 0.0 || sorted[lo] == sorted[lo + 1]) return sorted[lo];
  // Next to an infinity the line is that infinity (-inf + frac * inf would be NaN).
  if (std::isinf(sorted[lo])) return sorted[lo];
  if (std::isinf(sorted[lo + 1])) return sorted[lo + 1];
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double median(std::span<const double> values) {
  if (values.empty()) return 0.0;
  std::vector<double> v(values.begin(), values.end());
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

summary summarize(std::span<const double> samples) {
  summary s;
  if (samples.empty()) {
    s.rse_pct = std::numeric_limits<double>::infinity();
    return s;
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.n = sorted.size();
  s.median = quantile_sorted(sorted, 0.5);
  s.q1 = quantile_sorted(sorted, 0.25);
  s.q3 = quantile_sorted(sorted, 0.75);
  s.mean = mean_of(sorted);
  s.stddev = sample_stddev(sorted, s.mean);
  s.min = sorted.front();
  s.max = sorted.back();
  s.rse_pct = rse_pct_sorted(sorted, s.median);
  return s;
}

double median_rse_pct(std::span<const double> samples) {
  if (samples.size() < 2) return std::numeric_limits<double>::infinity();
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return rse_pct_sorted(sorted, quantile_sorted(sorted, 0.5));
}

grouped_rse median_rse_by_group(std::span<const double> values,
                                std::span<const std::uint32_t> group_of, std::size_t resamples,
                                double resample_below, std::uint64_t seed) {
  grouped_rse out;
  out.groups_pct = std::numeric_limits<double>::quiet_NaN();
  if (group_of.size() != values.size() || values.empty()) {
    out.samples_pct = out.total_pct = median_rse_pct(values);
    return out;
  }
  grouped_samples g(values, group_of);  // sorts the samples once, for both errors
  const double med = g.median();
  out.samples_pct = out.total_pct = rse_pct_sorted(g.sorted(), med);
  if (g.groups() < min_bootstrap_groups || resamples < 2 || !(out.samples_pct < resample_below))
    return out;
  sampler rng(seed);
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t r = 0; r < resamples; ++r) {
    // Centred on the median, so that the sums stay small next to their squares.
    const double d = g.resampled_median(rng) - med;
    sum += d;
    sum_sq += d * d;
  }
  const double b = static_cast<double>(resamples);
  const double var = std::max(0.0, (sum_sq - sum * sum / b) / (b - 1.0));
  const double se = std::sqrt(var) * group_widening(g.groups());
  out.groups_pct = se == 0.0    ? 0.0
                   : med == 0.0 ? std::numeric_limits<double>::infinity()
                                : 100.0 * se / std::abs(med);
  out.total_pct = std::max(out.samples_pct, out.groups_pct);
  return out;
}

ratio_ci bootstrap_ratio_of_medians(std::span<const double> numerator,
                                    std::span<const double> denominator, std::size_t resamples,
                                    double confidence, std::uint64_t seed) {
  ratio_ci out;
  out.confidence = confidence;
  if (numerator.empty() || denominator.empty()) return out;
  std::vector<double> num(numerator.begin(), numerator.end());
  std::vector<double> den(denominator.begin(), denominator.end());
  std::sort(num.begin(), num.end());
  std::sort(den.begin(), den.end());
  fill_interval(
      quantile_sorted(num, 0.5), quantile_sorted(den, 0.5), resamples, seed,
      [&](sampler& rng, bool numer) { return resampled_median(numer ? num : den, rng); }, out);
  return out;
}

ratio_ci bootstrap_ratio_of_medians_by_group(std::span<const double> numerator,
                                             std::span<const std::uint32_t> numerator_groups,
                                             std::span<const double> denominator,
                                             std::span<const std::uint32_t> denominator_groups,
                                             std::size_t resamples, double confidence,
                                             std::uint64_t seed) {
  if (numerator_groups.size() != numerator.size() ||
      denominator_groups.size() != denominator.size())
    return bootstrap_ratio_of_medians(numerator, denominator, resamples, confidence, seed);
  grouped_samples num(numerator, numerator_groups);
  grouped_samples den(denominator, denominator_groups);
  if (num.groups() < min_bootstrap_groups || den.groups() < min_bootstrap_groups)
    return bootstrap_ratio_of_medians(numerator, denominator, resamples, confidence, seed);
  ratio_ci out;
  out.confidence = confidence;
  out.by_group = true;
  const double num_med = num.median(), den_med = den.median();
  const double num_widen = group_widening(num.groups()), den_widen = group_widening(den.groups());
  fill_interval(
      num_med, den_med, resamples, seed,
      [&](sampler& rng, bool numer) {
        return numer ? widened(num.resampled_median(rng), num_med, num_widen)
                     : widened(den.resampled_median(rng), den_med, den_widen);
      },
      out);
  return out;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0.0 && p < 1.0) || !(df >= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  if (p < 0.5) return -student_t_quantile(1.0 - p, df);
  if (p == 0.5) return 0.0;
  // Beyond 1e5 degrees of freedom lgamma's difference below loses its digits: taken at 1e5
  // (whose quantiles lie within about 3e-5 of the normal's at p = 0.975, 1e-4 at 0.9995).
  df = std::min(df, 1e5);
  // log of the density's constant: Gamma((df + 1) / 2) / (sqrt(df pi) Gamma(df / 2)).
  const double log_c =
      std::lgamma((df + 1.0) / 2.0) - std::lgamma(df / 2.0) - 0.5 * std::log(df * std::numbers::pi);
  // P(0 <= T <= x) = the integral over theta in [0, atan x] of density(tan theta) / cos^2 theta
  // (t = tan theta): bounded and smooth on [0, pi / 2) for every df (constant for df = 1), where
  // the density itself needs ever finer steps as x grows. Simpson's rule.
  const auto integrand = [&](double theta) {
    const double t = std::tan(theta), c = std::cos(theta);
    return std::exp(log_c - (df + 1.0) / 2.0 * std::log1p(t * t / df)) / (c * c);
  };
  const auto mass = [&](double x) {
    constexpr int steps = 2000;  // even
    const double end = std::atan(x), h = end / steps;
    double sum = integrand(0.0) + integrand(end);
    for (int i = 1; i < steps; ++i) sum += integrand(i * h) * (i % 2 == 1 ? 4.0 : 2.0);
    return sum * h / 3.0;
  };
  // The upper end: doubled until it holds the wanted mass (df = 1, p = 0.9995 needs ~637).
  const double want = p - 0.5;
  double hi = 1.0;
  while (mass(hi) < want && hi < 1e7) hi *= 2.0;
  double lo = 0.0;
  for (int i = 0; i < 60 && hi - lo > 1e-7 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mass(mid) < want ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<double> group_medians(std::span<const double> values,
                                  std::span<const std::uint32_t> group_of, std::size_t groups) {
  if (group_of.size() != values.size()) return {};
  const by_group by(values, group_of);
  std::vector<double> out(groups, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < by.ids.size(); ++i)
    if (by.ids[i] < groups) out[by.ids[i]] = median(by.values[i]);
  return out;
}

}  // namespace kj::stats
