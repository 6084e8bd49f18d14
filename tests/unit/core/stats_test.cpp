#include <kjudge/core/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>

namespace {

namespace st = kj::stats;

TEST(stats_quantile, interpolates_linearly_between_order_statistics) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(st::quantile_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(v, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(v, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(st::quantile_sorted(v, 1.0), 4.0);
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(st::quantile_sorted(one, 0.3), 7.0);
}

TEST(stats_quantile, empty_input_is_a_precondition_error) {
  EXPECT_THROW((void)st::quantile_sorted({}, 0.5), kj::error);
}

TEST(stats_median, odd_even_unsorted_and_empty) {
  EXPECT_DOUBLE_EQ(st::median(std::vector<double>{5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(st::median(std::vector<double>{9, 1, 4, 2}), 3.0);
  EXPECT_DOUBLE_EQ(st::median(std::vector<double>{2.5}), 2.5);
  EXPECT_DOUBLE_EQ(st::median({}), 0.0);
}

TEST(stats_summarize, known_sample) {
  const std::vector<double> v = {9, 2, 5, 4, 4, 7, 4, 5};  // sorted: 2 4 4 4 5 5 7 9
  const st::summary s = st::summarize(v);
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.q1, 4.0);
  EXPECT_DOUBLE_EQ(s.q3, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.rse_pct, st::median_rse_pct(v));
  EXPECT_GT(s.rse_pct, 0.0);
}

TEST(stats_summarize, empty_and_single_samples) {
  const st::summary empty = st::summarize({});
  EXPECT_EQ(empty.n, 0u);
  EXPECT_EQ(empty.median, 0.0);
  EXPECT_TRUE(std::isinf(empty.rse_pct));
  const st::summary one = st::summarize(std::vector<double>{3.5});
  EXPECT_EQ(one.n, 1u);
  EXPECT_EQ(one.median, 3.5);
  EXPECT_EQ(one.min, 3.5);
  EXPECT_EQ(one.max, 3.5);
  EXPECT_TRUE(std::isnan(one.stddev));   // the n - 1 standard deviation of one sample: undefined
  EXPECT_TRUE(std::isinf(one.rse_pct));  // one sample: no spread known
}

TEST(stats_rse, uses_scaled_mad) {
  // median 10, MAD 1: sigma = 1.4826, rse = 100 * 1.2533 * 1.4826 / sqrt(3) / 10.
  const std::vector<double> v = {9, 10, 11};
  EXPECT_NEAR(st::median_rse_pct(v), 100 * 1.2533 * 1.4826 / std::sqrt(3.0) / 10, 1e-12);
}

TEST(stats_rse, falls_back_to_the_medians_interval_when_mad_is_zero) {
  // median 10, MAD 0; n = 5: order statistics 1 and 5 (10 and 12) bound the median's interval
  // (of coverage 1 - 2 / 32: z = 1.8627), so its standard error is 2 / (2 z).
  const std::vector<double> v = {10, 10, 12, 10, 10};
  EXPECT_NEAR(st::median_rse_pct(v), 100 * (2.0 / (2 * 1.862732)) / 10, 1e-5);
  // Event ticks: 12 of 20 samples at 6.016 us, 7 at 6.048, one outlier at 12. The median is
  // pinned to within a tick; the standard deviation (the old fallback) read 6.2%.
  std::vector<double> ticks(12, 6.016);
  ticks.insert(ticks.end(), 7, 6.048);
  ticks.push_back(12.0);
  // Ranks 6 and 15 (6.016 and 6.048), z = 2.0396.
  const double rse = st::median_rse_pct(ticks);
  EXPECT_NEAR(rse, 100 * (0.032 / (2 * 2.039607)) / 6.016, 1e-6);
  EXPECT_LT(rse, 0.5);
}

TEST(stats_rse, two_modes_are_not_taken_for_a_tight_median) {
  // 11 samples near 6 us and 9 near 9 us (a slow mode, as round parity or a slow input set
  // makes): the MAD is one peak's width (0.01 us: an error of 0.1%), while the median moves
  // between the peaks from run to run. The median's order-statistic interval spans both.
  std::vector<double> v;
  for (int i = 0; i < 11; ++i) v.push_back(6.0 + 0.002 * (i % 5));
  for (int i = 0; i < 9; ++i) v.push_back(9.0 + 0.002 * (i % 5));
  const double mad_only = 100 * 1.2533 * 1.4826 * 0.006 / std::sqrt(20.0) / 6.006;
  const double rse = st::median_rse_pct(v);
  EXPECT_GT(rse, 10.0) << "the MAD alone would say " << mad_only << "%";
  EXPECT_LT(mad_only, 0.5);
}

TEST(stats_rse, the_medians_interval_takes_the_binomials_ranks) {
  // l: one past the largest k with P(B <= k) <= 0.025, B ~ Binomial(n, 1/2); z: the normal
  // quantile of the coverage 1 - 2 P(B < l) (computed apart, with exact binomial sums and Python's
  // NormalDist).
  struct row {
    std::size_t n, l;
    double z;
  };
  for (const row& r : {row{2, 1, 0.674490}, row{5, 1, 1.862732}, row{6, 1, 2.153875},
                       row{10, 2, 2.299362}, row{20, 6, 2.039607}, row{100, 40, 2.106048}}) {
    const auto m = st::median_interval_ranks(r.n);
    EXPECT_EQ(m.l, r.l) << r.n;
    EXPECT_EQ(m.u, r.n + 1 - r.l) << r.n;
    EXPECT_NEAR(m.z, r.z, 1e-5) << r.n;
  }
  // Far past 2^-n's underflow: about n/2 - 0.98 sqrt(n), and z just above 1.96.
  const auto big = st::median_interval_ranks(100'000);
  EXPECT_NEAR(static_cast<double>(big.l), 50'000 - 0.98 * std::sqrt(100'000.0), 2.0);
  EXPECT_GE(big.z, 1.96);
  EXPECT_LT(big.z, 1.965);
}

TEST(stats_rse, estimates_the_medians_standard_error_at_twenty_samples) {
  // Normal samples, n = 20 (the default least number): the estimate's mean over many draws
  // against the medians' own spread. The ranks n/2 -+ 0.98 sqrt(n), rounded outwards, over
  // 1.96 read 1.4 times the truth; the binomial's own read about 1.1 (the larger of two
  // estimates is never below either).
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(100.0, 1.0);
  constexpr int draws = 4000;
  std::vector<double> medians;
  double estimate = 0;
  for (int d = 0; d < draws; ++d) {
    std::vector<double> v(20);
    for (auto& x : v) x = noise(rng);
    const double med = st::median(v);
    medians.push_back(med);
    estimate += st::median_rse_pct(v) / 100.0 * med;
  }
  estimate /= draws;
  const double truth = st::summarize(medians).stddev;
  EXPECT_GT(estimate / truth, 0.95);
  EXPECT_LT(estimate / truth, 1.2);
}

TEST(stats_rse, zero_for_identical_infinite_for_too_few_samples) {
  EXPECT_EQ(st::median_rse_pct(std::vector<double>{4, 4, 4, 4}), 0.0);
  EXPECT_TRUE(std::isinf(st::median_rse_pct(std::vector<double>{4})));
  EXPECT_TRUE(std::isinf(st::median_rse_pct({})));
}

TEST(stats_rse, shrinks_with_more_samples_like_one_over_sqrt_n) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(100.0, 2.0);
  std::vector<double> small(100), large(10'000);
  for (auto& x : small) x = noise(rng);
  for (auto& x : large) x = noise(rng);
  const double rse_small = st::median_rse_pct(small);
  const double rse_large = st::median_rse_pct(large);
  // Normal noise: sigma 2 around 100 gives about 1.2533 * 2 / sqrt(n) percent.
  EXPECT_NEAR(rse_large, 1.2533 * 2.0 / 100.0, 0.003);
  EXPECT_NEAR(rse_small / rse_large, 10.0, 2.0);
}

// --- bootstrap -------------------------------------------------------------------------------

std::vector<double> noisy(std::size_t n, double centre, double sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(centre, sigma);
  std::vector<double> v(n);
  for (auto& x : v) x = noise(rng);
  return v;
}

/** Textbook percentile bootstrap: resample indices, take medians by selection. */
st::ratio_ci brute_force_bootstrap(const std::vector<double>& num, const std::vector<double>& den,
                                   std::size_t resamples, double confidence) {
  std::mt19937_64 rng(12345);
  const auto resampled_median = [&](const std::vector<double>& v) {
    std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
    std::vector<double> r(v.size());
    for (auto& x : r) x = v[pick(rng)];
    return st::median(r);
  };
  std::vector<double> ratios;
  for (std::size_t i = 0; i < resamples; ++i)
    ratios.push_back(resampled_median(num) / resampled_median(den));
  std::sort(ratios.begin(), ratios.end());
  st::ratio_ci ci;
  ci.ratio = st::median(num) / st::median(den);
  ci.lo = st::quantile_sorted(ratios, (1 - confidence) / 2);
  ci.hi = st::quantile_sorted(ratios, 1 - (1 - confidence) / 2);
  return ci;
}

TEST(stats_bootstrap, degenerate_inputs_give_zeros) {
  const std::vector<double> some = {1, 2, 3};
  const std::vector<double> zeros = {0, 0, 0};
  for (const auto& ci :
       {st::bootstrap_ratio_of_medians({}, some), st::bootstrap_ratio_of_medians(some, {}),
        st::bootstrap_ratio_of_medians(zeros, some), st::bootstrap_ratio_of_medians(some, zeros)}) {
    EXPECT_EQ(ci.ratio, 0.0);
    EXPECT_EQ(ci.lo, 0.0);
    EXPECT_EQ(ci.hi, 0.0);
  }
}

TEST(stats_bootstrap, resamples_with_a_zero_denominator_median_bound_nothing) {
  // 9 of the denominator's 20 samples are 0: about a quarter of its resamples have median 0.
  // Their ratios are unbounded and count as such (they were dropped, and the interval read
  // [1, 2] over 1515 resamples).
  const std::vector<double> num(20, 1.0);
  std::vector<double> den(9, 0.0);
  den.resize(20, 1.0);
  const st::ratio_ci ci = st::bootstrap_ratio_of_medians(num, den);
  EXPECT_EQ(ci.ratio, 1.0);
  EXPECT_EQ(ci.resamples, 2000u);
  EXPECT_TRUE(std::isinf(ci.hi));
  EXPECT_LE(ci.lo, 1.0);
}

TEST(stats_quantile, infinite_values_interpolate_without_nan) {
  const std::vector<double> v = {1.0, 2.0, std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::infinity()};
  EXPECT_EQ(st::quantile_sorted(v, 0.0), 1.0);
  EXPECT_EQ(st::quantile_sorted(v, 1.0 / 3.0), 2.0);
  EXPECT_TRUE(std::isinf(st::quantile_sorted(v, 0.5)));
  EXPECT_TRUE(std::isinf(st::quantile_sorted(v, 0.9)));
  // Negative infinity too: between -inf and a number the line is -inf, not NaN.
  const double ninf = -std::numeric_limits<double>::infinity();
  const std::vector<double> w = {ninf, 0.0, 1.0};
  EXPECT_EQ(st::quantile_sorted(w, 0.25), ninf);
  EXPECT_EQ(st::quantile_sorted(w, 0.75), 0.5);
  const std::vector<double> two = {ninf, 1.0};
  EXPECT_EQ(st::quantile_sorted(two, 0.5), ninf);
  EXPECT_EQ(st::summarize(two).median, st::median(two));
}

TEST(stats_bootstrap, ratio_is_the_ratio_of_medians_inside_its_interval) {
  const auto num = noisy(301, 200.0, 4.0, 1);
  const auto den = noisy(300, 100.0, 2.0, 2);
  const st::ratio_ci ci = st::bootstrap_ratio_of_medians(num, den);
  EXPECT_DOUBLE_EQ(ci.ratio, st::median(num) / st::median(den));
  EXPECT_LT(ci.lo, ci.ratio);
  EXPECT_GT(ci.hi, ci.ratio);
  EXPECT_EQ(ci.resamples, 2000u);
  EXPECT_EQ(ci.confidence, 0.95);
}

TEST(stats_bootstrap, deterministic_for_a_seed) {
  const auto num = noisy(101, 50.0, 5.0, 3);
  const auto den = noisy(80, 40.0, 5.0, 4);
  const auto a = st::bootstrap_ratio_of_medians(num, den, 500, 0.9, 42);
  const auto b = st::bootstrap_ratio_of_medians(num, den, 500, 0.9, 42);
  const auto c = st::bootstrap_ratio_of_medians(num, den, 500, 0.9, 43);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi);
}

TEST(stats_bootstrap, constant_samples_give_a_zero_width_interval) {
  const std::vector<double> num(50, 3.0), den(40, 2.0);
  const auto ci = st::bootstrap_ratio_of_medians(num, den);
  EXPECT_DOUBLE_EQ(ci.ratio, 1.5);
  EXPECT_DOUBLE_EQ(ci.lo, 1.5);
  EXPECT_DOUBLE_EQ(ci.hi, 1.5);
}

// The fast order-statistic sampler must give the same interval as resampling indices, for odd
// and even sample counts and for skewed data with ties (as timing samples are).
TEST(stats_bootstrap, agrees_with_brute_force_resampling) {
  struct data_case {
    std::vector<double> num, den;
  };
  std::vector<double> skewed_num, skewed_den;
  std::mt19937_64 rng(9);
  std::exponential_distribution<double> tail(1.0);
  for (int i = 0; i < 120; ++i) skewed_num.push_back(10.0 + std::round(10 * tail(rng)) / 10);
  for (int i = 0; i < 151; ++i) skewed_den.push_back(5.0 + std::round(10 * tail(rng)) / 10);
  const data_case cases[] = {{noisy(201, 1000.0, 10.0, 5), noisy(200, 500.0, 5.0, 6)},
                             {skewed_num, skewed_den}};
  for (const auto& c : cases) {
    const auto fast = st::bootstrap_ratio_of_medians(c.num, c.den, 40'000, 0.95);
    const auto slow = brute_force_bootstrap(c.num, c.den, 8'000, 0.95);
    const double width = slow.hi - slow.lo;
    ASSERT_GT(width, 0.0);
    EXPECT_NEAR(fast.lo, slow.lo, 0.05 * width);
    EXPECT_NEAR(fast.hi, slow.hi, 0.05 * width);
    EXPECT_DOUBLE_EQ(fast.ratio, slow.ratio);
  }
}

// For tiny samples the bootstrap distribution of the median can be enumerated exactly; every
// tail quantile must land on the right atom (this catches an off-by-one in the middle ranks).
TEST(stats_bootstrap, matches_the_exact_bootstrap_distribution_of_tiny_samples) {
  const std::vector<double> unit = {1.0};
  for (const std::vector<double>& sample :
       {std::vector<double>{1, 2, 4, 8}, std::vector<double>{1, 2, 4, 8, 16}}) {
    const std::size_t n = sample.size();
    std::vector<double> medians;  // the median of every equally likely ordered resample
    std::vector<std::size_t> digits(n, 0);
    for (;;) {
      std::vector<double> r(n);
      for (std::size_t i = 0; i < n; ++i) r[i] = sample[digits[i]];
      medians.push_back(st::median(r));
      std::size_t d = 0;
      while (d < n && ++digits[d] == n) digits[d++] = 0;
      if (d == n) break;
    }
    std::sort(medians.begin(), medians.end());
    const auto cdf_below = [&](double x) {  // P(median < x)
      return static_cast<double>(std::lower_bound(medians.begin(), medians.end(), x) -
                                 medians.begin()) /
             static_cast<double>(medians.size());
    };
    int checked = 0;
    for (const double tail : {0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45}) {
      // Exact tail quantile: the first atom whose cumulative probability reaches `tail`.
      const double exact =
          medians[static_cast<std::size_t>(std::ceil(tail * static_cast<double>(medians.size()))) -
                  1];
      const double below = cdf_below(exact);
      const double through = cdf_below(std::nextafter(exact, 1e300));
      if (tail - below < 0.02 || through - tail < 0.02) continue;  // too close to call
      const auto ci = st::bootstrap_ratio_of_medians(sample, unit, 20'000, 1.0 - 2.0 * tail);
      EXPECT_DOUBLE_EQ(ci.lo, exact) << "n " << n << " tail " << tail;
      ++checked;
    }
    EXPECT_GE(checked, 4) << "n " << n;
  }
}

TEST(stats_bootstrap, interval_narrows_with_more_samples) {
  const auto small = st::bootstrap_ratio_of_medians(noisy(50, 100, 5, 10), noisy(50, 100, 5, 11));
  const auto large =
      st::bootstrap_ratio_of_medians(noisy(5000, 100, 5, 12), noisy(5000, 100, 5, 13));
  EXPECT_LT(large.hi - large.lo, 0.2 * (small.hi - small.lo));
  // Same distribution on both sides: the interval covers 1.
  EXPECT_LT(large.lo, 1.0);
  EXPECT_GT(large.hi, 1.0);
}

TEST(stats_bootstrap, fast_enough_for_large_samples) {
  const auto num = noisy(10'000, 100, 5, 20);
  const auto den = noisy(10'000, 80, 5, 21);
  const auto start = std::chrono::steady_clock::now();
  const auto ci = st::bootstrap_ratio_of_medians(num, den, 2000);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
  EXPECT_LT(ms, 100.0);
  EXPECT_LT(ci.lo, ci.hi);
}

// --- bootstrap by group (a timing figure's input sets) --------------------------------------

/** `groups` groups of `per_group` samples: group g centred at centre * (1 + offset_pct(g) / 100)
 *  with normal noise of `sigma`, values rounded to multiples of `tick` (as event timestamps
 *  are), taken round robin (sample i on group i % groups, as a figure rotates its sets). */
struct grouped {
  std::vector<double> values;
  std::vector<std::uint32_t> group;
};
grouped in_groups(std::size_t groups, std::size_t per_group, double centre, double sigma,
                  double tick, const std::vector<double>& offset_pct, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  grouped out;
  for (std::size_t i = 0; i < groups * per_group; ++i) {
    const auto g = static_cast<std::uint32_t>(i % groups);
    const double off = offset_pct.empty() ? 0.0 : offset_pct[g % offset_pct.size()];
    const double v = centre * (1.0 + off / 100.0) + noise(rng);
    out.values.push_back(tick > 0 ? std::round(v / tick) * tick : v);
    out.group.push_back(g);
  }
  return out;
}

/** A resampled median of G groups as the interval takes it: moved from the side's median by
 *  sqrt(G / (G - 1)) on the log scale. */
double widened(double resampled, double centre, std::size_t groups) {
  const auto g = static_cast<double>(groups);
  return centre * std::pow(resampled / centre, std::sqrt(g / (g - 1.0)));
}

/** Textbook two-level resampling by group: draw the groups, concatenate their samples, select;
 *  each side's medians widened. */
st::ratio_ci brute_force_group_bootstrap(const grouped& num, const grouped& den,
                                         std::size_t resamples, double confidence) {
  std::mt19937_64 rng(777);
  const auto resampled_median = [&](const grouped& side) {
    std::vector<std::vector<double>> by;
    for (std::size_t i = 0; i < side.values.size(); ++i) {
      if (side.group[i] >= by.size()) by.resize(side.group[i] + 1);
      by[side.group[i]].push_back(side.values[i]);
    }
    std::uniform_int_distribution<std::size_t> pick(0, by.size() - 1);
    std::vector<double> r;
    for (std::size_t k = 0; k < by.size(); ++k) {
      const auto& g = by[pick(rng)];
      r.insert(r.end(), g.begin(), g.end());
    }
    return widened(st::median(r), st::median(side.values), by.size());
  };
  std::vector<double> ratios;
  for (std::size_t i = 0; i < resamples; ++i)
    ratios.push_back(resampled_median(num) / resampled_median(den));
  std::sort(ratios.begin(), ratios.end());
  st::ratio_ci ci;
  ci.ratio = st::median(num.values) / st::median(den.values);
  ci.lo = st::quantile_sorted(ratios, (1 - confidence) / 2);
  ci.hi = st::quantile_sorted(ratios, 1 - (1 - confidence) / 2);
  return ci;
}

TEST(stats_group_bootstrap, agrees_with_brute_force_resampling_of_groups) {
  // Groups apart (two slow sets of eight, as the QuantVLA kernel's were).
  const auto num = in_groups(8, 101, 38.0, 0.4, 0.032, {0, 0, 2.5, 0, 0, 0, 3, 0}, 1);
  const auto den = in_groups(8, 100, 6.3, 0.1, 0.032, {0, 3, 0, 0, 3, 0, 0, 0}, 2);
  const auto fast = st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values,
                                                            den.group, 20'000, 0.95);
  const auto slow = brute_force_group_bootstrap(num, den, 20'000, 0.95);
  EXPECT_TRUE(fast.by_group);
  EXPECT_EQ(fast.resamples, 20'000u);
  EXPECT_DOUBLE_EQ(fast.ratio, slow.ratio);
  const double width = slow.hi - slow.lo;
  ASSERT_GT(width, 0.0);
  // The bootstrap distribution has atoms (which sets were drawn): tails agree to Monte Carlo
  // error around them.
  EXPECT_NEAR(fast.lo, slow.lo, 0.1 * width);
  EXPECT_NEAR(fast.hi, slow.hi, 0.1 * width);
}

// Tiny groups of unequal sizes (odd and even totals): the bootstrap distribution of the pooled
// median can be enumerated over every equally likely ordered draw of groups, and every tail
// quantile must land on the right atom, widened by sqrt(4 / 3) on the log scale about the
// median of all eight values, 6.5 (the other side's groups are alike: its medians are all 1);
// then the same with the sides swapped, for the denominator's widening.
TEST(stats_group_bootstrap, matches_the_exact_distribution_of_tiny_unequal_groups) {
  const std::vector<double> values = {1, 2, 3, 5, 8, 13, 21, 34};
  const std::vector<std::uint32_t> group = {0, 1, 1, 2, 2, 2, 3, 3};  // sizes 1, 2, 3, 2
  const std::vector<std::vector<double>> by = {{1}, {2, 3}, {5, 8, 13}, {21, 34}};
  const std::vector<double> unit = {1, 1, 1, 1};
  const std::vector<std::uint32_t> unit_groups = {0, 1, 2, 3};
  std::vector<double> medians;
  for (std::size_t code = 0; code < 256; ++code) {  // four draws of four groups
    std::vector<double> r;
    for (std::size_t d = 0, c = code; d < 4; ++d, c /= 4)
      r.insert(r.end(), by[c % 4].begin(), by[c % 4].end());
    medians.push_back(st::median(r));
  }
  std::sort(medians.begin(), medians.end());
  const auto cdf_below = [&](double x) {
    return static_cast<double>(std::lower_bound(medians.begin(), medians.end(), x) -
                               medians.begin()) /
           static_cast<double>(medians.size());
  };
  int checked = 0, moved = 0;
  for (const double tail : {0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45}) {
    const double atom =
        medians[static_cast<std::size_t>(std::ceil(tail * static_cast<double>(medians.size()))) -
                1];
    const double below = cdf_below(atom);
    const double through = cdf_below(std::nextafter(atom, 1e300));
    if (tail - below < 0.02 || through - tail < 0.02) continue;  // too close to call
    const auto ci = st::bootstrap_ratio_of_medians_by_group(values, group, unit, unit_groups,
                                                            40'000, 1.0 - 2.0 * tail);
    ASSERT_TRUE(ci.by_group);
    const double exact = widened(atom, 6.5, 4);
    EXPECT_DOUBLE_EQ(ci.lo, exact) << "tail " << tail;
    // The same groups as the denominator: the ratio's upper end is 1 over the widened atom.
    const auto flipped = st::bootstrap_ratio_of_medians_by_group(unit, unit_groups, values, group,
                                                                 40'000, 1.0 - 2.0 * tail);
    ASSERT_TRUE(flipped.by_group);
    EXPECT_DOUBLE_EQ(flipped.hi, 1.0 / exact) << "tail " << tail;
    if (atom < 6.5) {  // moved down, away from the median
      EXPECT_LT(ci.lo, atom) << "tail " << tail;
      ++moved;
    }
    ++checked;
  }
  EXPECT_GE(checked, 3);
  EXPECT_GE(moved, 2);
}

TEST(stats_group_bootstrap, groups_apart_widen_the_interval_that_sampling_noise_alone_gives) {
  // Ticks of 0.032 us and little noise within a set: resampling samples sees only the ties and
  // gives (next to) no width; the sets' 3% offsets are what another run's sets would move.
  const auto num = in_groups(8, 100, 38.0, 0.05, 0.032, {}, 3);
  const auto den = in_groups(8, 100, 6.3, 0.02, 0.032, {0, 3, 0, 3, 0, 0, 3, 0}, 4);
  const auto by_sample = st::bootstrap_ratio_of_medians(num.values, den.values);
  const auto by_group =
      st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values, den.group);
  EXPECT_FALSE(by_sample.by_group);
  EXPECT_TRUE(by_group.by_group);
  EXPECT_DOUBLE_EQ(by_group.ratio, by_sample.ratio);
  // Three slow sets of eight: resamples with five or more of them read the slow mode, with one
  // or none the fast; the interval spans both (3% apart), where resampling samples keeps the
  // slow samples near their share and moves the median little.
  EXPECT_LT(by_group.lo, by_group.ratio * 0.98);
  EXPECT_GE(by_group.hi, by_group.ratio);
  EXPECT_GT(by_group.hi - by_group.lo, 2.0 * (by_sample.hi - by_sample.lo));
}

TEST(stats_group_bootstrap, groups_alike_give_about_the_sampling_interval) {
  const auto num = in_groups(8, 250, 100.0, 5.0, 0.0, {}, 5);
  const auto den = in_groups(8, 250, 50.0, 2.5, 0.0, {}, 6);
  const auto by_sample = st::bootstrap_ratio_of_medians(num.values, den.values);
  const auto by_group =
      st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values, den.group);
  const double ws = by_sample.hi - by_sample.lo, wg = by_group.hi - by_group.lo;
  EXPECT_GT(wg, 0.5 * ws);
  EXPECT_LT(wg, 2.0 * ws);
  EXPECT_LT(by_group.lo, by_group.ratio);
  EXPECT_GT(by_group.hi, by_group.ratio);
}

TEST(stats_group_bootstrap, few_groups_or_mismatched_groups_resample_by_sample) {
  const auto num = in_groups(3, 50, 10.0, 1.0, 0.0, {}, 7);
  const auto den = in_groups(8, 50, 5.0, 0.5, 0.0, {}, 8);
  const auto plain = st::bootstrap_ratio_of_medians(num.values, den.values, 500, 0.9, 42);
  const auto three = st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values,
                                                             den.group, 500, 0.9, 42);
  EXPECT_FALSE(three.by_group);
  EXPECT_EQ(three.lo, plain.lo);
  EXPECT_EQ(three.hi, plain.hi);
  const std::vector<std::uint32_t> short_groups(num.values.size() - 1, 0);
  const auto mismatched = st::bootstrap_ratio_of_medians_by_group(
      num.values, short_groups, den.values, den.group, 500, 0.9, 42);
  EXPECT_FALSE(mismatched.by_group);
  EXPECT_EQ(mismatched.lo, plain.lo);
  // Four groups are enough.
  const auto four = in_groups(4, 50, 10.0, 1.0, 0.0, {}, 9);
  EXPECT_TRUE(
      st::bootstrap_ratio_of_medians_by_group(four.values, four.group, den.values, den.group)
          .by_group);
  EXPECT_EQ(st::min_bootstrap_groups, 4u);
}

TEST(stats_group_bootstrap, deterministic_for_a_seed_and_zero_medians_give_zeros) {
  const auto num = in_groups(8, 30, 10.0, 1.0, 0.0, {0, 5}, 10);
  const auto den = in_groups(8, 30, 5.0, 0.5, 0.0, {}, 11);
  const auto a = st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values,
                                                         den.group, 500, 0.9, 42);
  const auto b = st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values,
                                                         den.group, 500, 0.9, 42);
  const auto c = st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values,
                                                         den.group, 500, 0.9, 43);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi);
  std::vector<double> zeros(num.values.size(), 0.0);
  const auto z = st::bootstrap_ratio_of_medians_by_group(zeros, num.group, den.values, den.group);
  EXPECT_EQ(z.ratio, 0.0);
  EXPECT_EQ(z.lo, 0.0);
  EXPECT_EQ(z.hi, 0.0);
}

TEST(stats_group_bootstrap, fast_enough_for_the_largest_runs) {
  // A --precise run may keep up to 100,000 samples a side.
  const auto num = in_groups(8, 12'500, 100.0, 5.0, 0.0, {0, 1}, 12);
  const auto den = in_groups(8, 12'500, 80.0, 5.0, 0.0, {}, 13);
  const auto start = std::chrono::steady_clock::now();
  const auto ci =
      st::bootstrap_ratio_of_medians_by_group(num.values, num.group, den.values, den.group, 2000);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 1000.0);
  EXPECT_LT(ci.lo, ci.hi);
}

TEST(stats_grouped_rse, sets_apart_set_a_floor_that_more_samples_do_not_lower) {
  // Eight sets 1% apart (offsets -1.5% .. +1.5%), little noise within a set: taken as
  // independent, the samples' error falls as 1 / sqrt(n) (a review read 0.038% at n = 1000
  // while runs differed by 0.4%); over sets it stays near sd(offsets) / sqrt(8) = 0.41%.
  const std::vector<double> offsets = {-1.5, 1.0, -0.5, 0.5, 1.5, -1.0, 0.0, 0.25};
  const auto small = in_groups(8, 25, 100.0, 0.05, 0.0, offsets, 21);
  const auto large = in_groups(8, 1250, 100.0, 0.05, 0.0, offsets, 22);
  const auto a = st::median_rse_by_group(small.values, small.group);
  const auto b = st::median_rse_by_group(large.values, large.group);
  EXPECT_LT(b.samples_pct, 0.1);
  EXPECT_LT(b.samples_pct, a.samples_pct * 0.3);  // 50 times the samples
  EXPECT_GT(b.groups_pct, 0.2);
  EXPECT_LT(b.groups_pct, 0.8);
  EXPECT_GT(b.groups_pct, a.groups_pct * 0.5);  // no smaller for the samples
  EXPECT_EQ(b.total_pct, b.groups_pct);
  EXPECT_DOUBLE_EQ(b.samples_pct, st::median_rse_pct(large.values));
}

TEST(stats_grouped_rse, the_error_over_sets_predicts_how_far_runs_on_other_sets_read) {
  // 300 runs, each on eight sets whose offsets are drawn afresh (sd 1%), 100 samples a set with
  // 0.5% noise: the spread of the runs' medians against the error each run reports of itself.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> offset(0.0, 1.0);
  std::vector<double> medians, reported, by_samples;
  for (int run = 0; run < 300; ++run) {
    std::vector<double> off(8);
    for (double& o : off) o = offset(rng);
    const auto g = in_groups(8, 100, 100.0, 0.5, 0.0, off, 1000 + run);
    medians.push_back(st::median(g.values));
    const auto r = st::median_rse_by_group(g.values, g.group);
    reported.push_back(r.total_pct);
    by_samples.push_back(r.samples_pct);
  }
  const auto n = static_cast<double>(medians.size());
  double mean = 0, ss = 0;
  for (const double m : medians) mean += m / n;
  for (const double m : medians) ss += (m - mean) * (m - mean);
  const double actual_pct = 100.0 * std::sqrt(ss / (n - 1)) / mean;
  const double typical = st::median(reported);
  // The runs' medians spread by about 0.36% (1% / sqrt(8), a little more for the noise): the
  // error over sets says so within a third, the samples' alone by a factor of five less.
  EXPECT_GT(actual_pct, 0.25);
  EXPECT_GT(typical, actual_pct * 0.67) << actual_pct;
  EXPECT_LT(typical, actual_pct * 1.5) << actual_pct;
  EXPECT_LT(st::median(by_samples), actual_pct * 0.2) << actual_pct;
}

TEST(stats_grouped_rse, sets_alike_read_about_the_samples_error) {
  const auto g = in_groups(8, 200, 50.0, 2.5, 0.0, {}, 23);
  const auto r = st::median_rse_by_group(g.values, g.group);
  EXPECT_GT(r.groups_pct, 0.5 * r.samples_pct);
  EXPECT_LT(r.groups_pct, 2.0 * r.samples_pct);
  EXPECT_EQ(r.total_pct, std::max(r.samples_pct, r.groups_pct));
}

TEST(stats_grouped_rse, too_few_sets_or_mismatched_lengths_use_the_samples_alone) {
  const auto three = in_groups(3, 50, 10.0, 1.0, 0.0, {-5, 0, 5}, 24);
  const auto r = st::median_rse_by_group(three.values, three.group);
  EXPECT_TRUE(std::isnan(r.groups_pct));
  EXPECT_EQ(r.total_pct, r.samples_pct);
  const auto four = in_groups(4, 50, 10.0, 1.0, 0.0, {-5, 0, 5, 0}, 25);
  EXPECT_FALSE(std::isnan(st::median_rse_by_group(four.values, four.group).groups_pct));
  const std::vector<std::uint32_t> short_groups(four.values.size() - 1, 0);
  EXPECT_TRUE(std::isnan(st::median_rse_by_group(four.values, short_groups).groups_pct));
  const auto none = st::median_rse_by_group({}, {});
  EXPECT_TRUE(std::isinf(none.total_pct));
}

TEST(stats_grouped_rse, the_sets_are_resampled_only_below_the_given_error) {
  // The stopping rule's shortcut: a samples' error at or above its target fails whatever the
  // sets say, so they are not resampled; under it they are, as without the bound.
  const auto g =
      in_groups(8, 100, 100.0, 0.5, 0.0, {-1.5, 1.0, -0.5, 0.5, 1.5, -1.0, 0.0, 0.25}, 28);
  const auto full = st::median_rse_by_group(g.values, g.group);
  const auto skipped = st::median_rse_by_group(g.values, g.group, 200, full.samples_pct);
  EXPECT_TRUE(std::isnan(skipped.groups_pct));
  EXPECT_EQ(skipped.total_pct, full.samples_pct);
  const auto kept = st::median_rse_by_group(g.values, g.group, 200, full.samples_pct * 1.01);
  EXPECT_EQ(kept.groups_pct, full.groups_pct);
  EXPECT_GT(kept.total_pct, kept.samples_pct);  // the sets, 1% apart, dominate
}

TEST(stats_grouped_rse, deterministic_for_a_seed_and_zero_for_identical_samples) {
  const auto g = in_groups(8, 30, 10.0, 1.0, 0.0, {0, 3}, 26);
  constexpr double all = std::numeric_limits<double>::infinity();  // always resample
  const auto a = st::median_rse_by_group(g.values, g.group, 200, all, 7);
  const auto b = st::median_rse_by_group(g.values, g.group, 200, all, 7);
  const auto c = st::median_rse_by_group(g.values, g.group, 200, all, 8);
  EXPECT_EQ(a.groups_pct, b.groups_pct);
  EXPECT_NE(a.groups_pct, c.groups_pct);
  const std::vector<double> same(g.values.size(), 4.0);
  const auto z = st::median_rse_by_group(same, g.group);
  EXPECT_EQ(z.groups_pct, 0.0);
  EXPECT_EQ(z.total_pct, 0.0);
}

TEST(stats_grouped_rse, fast_enough_for_the_largest_runs) {
  // The stopping rule's checks are held to a twentieth of the loop's time; the result computes
  // it once a figure. The largest run: 100,000 samples on 32 sets (26 ms at -O2; the limit
  // leaves room for the sanitizer build).
  const auto g = in_groups(32, 3125, 100.0, 5.0, 0.0, {0, 1}, 27);
  const auto start = std::chrono::steady_clock::now();
  const auto r = st::median_rse_by_group(g.values, g.group);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 2000.0);
  EXPECT_FALSE(std::isnan(r.groups_pct));
}

TEST(stats_group_medians, one_median_a_group_and_nan_for_an_empty_one) {
  const std::vector<double> v = {1, 10, 3, 20, 5, 30, 7};
  const std::vector<std::uint32_t> g = {0, 1, 0, 1, 0, 1, 9};
  const auto m = st::group_medians(v, g, 3);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m[0], 3.0);
  EXPECT_DOUBLE_EQ(m[1], 20.0);
  EXPECT_TRUE(std::isnan(m[2]));  // group 9 is past the three asked for: left out
  EXPECT_TRUE(st::group_medians(v, std::vector<std::uint32_t>(3, 0), 3).empty());
}

}  // namespace

TEST(stats_student_t, quantiles_match_the_tables) {
  // Two-sided 95% (p = 0.975) and 99% (p = 0.995) critical values, from the standard tables.
  const std::vector<std::tuple<double, double, double>> table = {
      {1, 0.975, 12.706},  {2, 0.975, 4.303},   {3, 0.975, 3.182},  {4, 0.975, 2.776},
      {9, 0.975, 2.262},   {29, 0.975, 2.045},  {1, 0.995, 63.657}, {5, 0.995, 4.032},
      {1, 0.9995, 636.62}, {2, 0.9995, 31.599}, {10, 0.9995, 4.587}};
  for (const auto& [df, p, t] : table) {
    EXPECT_NEAR(kj::stats::student_t_quantile(p, df), t, 2e-3 * t) << "df " << df << " p " << p;
    EXPECT_NEAR(kj::stats::student_t_quantile(1.0 - p, df), -t, 2e-3 * t);
  }
  // Many degrees of freedom: the normal quantile.
  EXPECT_NEAR(kj::stats::student_t_quantile(0.975, 1e6), 1.95996, 1e-3);
  EXPECT_EQ(kj::stats::student_t_quantile(0.5, 3), 0.0);
  EXPECT_TRUE(std::isnan(kj::stats::student_t_quantile(1.0, 3)));
  EXPECT_TRUE(std::isnan(kj::stats::student_t_quantile(0.9, 0.5)));
}
