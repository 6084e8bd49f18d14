#include <kjudge/core/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
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
  EXPECT_EQ(empty.rse_pct, 0.0);
  const st::summary one = st::summarize(std::vector<double>{3.5});
  EXPECT_EQ(one.n, 1u);
  EXPECT_EQ(one.median, 3.5);
  EXPECT_EQ(one.min, 3.5);
  EXPECT_EQ(one.max, 3.5);
  EXPECT_EQ(one.stddev, 0.0);
  EXPECT_EQ(one.rse_pct, 0.0);
}

TEST(stats_rse, uses_scaled_mad) {
  // median 10, MAD 1: sigma = 1.4826, rse = 100 * 1.2533 * 1.4826 / sqrt(3) / 10.
  const std::vector<double> v = {9, 10, 11};
  EXPECT_NEAR(st::median_rse_pct(v), 100 * 1.2533 * 1.4826 / std::sqrt(3.0) / 10, 1e-12);
}

TEST(stats_rse, falls_back_to_stddev_when_mad_is_zero) {
  // median 10, MAD 0; sample stddev = sqrt(3.2 / 4).
  const std::vector<double> v = {10, 10, 12, 10, 10};
  EXPECT_NEAR(st::median_rse_pct(v), 100 * 1.2533 * std::sqrt(0.8) / std::sqrt(5.0) / 10, 1e-12);
}

TEST(stats_rse, zero_for_identical_or_too_few_samples) {
  EXPECT_EQ(st::median_rse_pct(std::vector<double>{4, 4, 4, 4}), 0.0);
  EXPECT_EQ(st::median_rse_pct(std::vector<double>{4}), 0.0);
  EXPECT_EQ(st::median_rse_pct({}), 0.0);
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

}  // namespace
