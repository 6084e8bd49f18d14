// Totals over kernels: counts summed and ratios recomputed from the sums (rule 13), percentages
// weighted by duration, stall shares of total stall cycles summing to 100 (rule 14).

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/aggregate.hpp>
#include <kjudge/profile/derive.hpp>
#include <kjudge/profile/invariants.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

kernel_metrics kernel(double duration_ns, double l2_hits, double l2_sectors) {
  kernel_metrics k;
  k.name = "k";
  k.duration_ns = duration_ns;
  k.sm_count = 132;
  k.max_warps_per_sm = 64;
  k.l2_hit_sectors = l2_hits;
  k.l2_sectors = l2_sectors;
  return k;
}

TEST(Aggregate, HitRateOfTotalIsSumOfHitsOverSumOfSectors) {
  // 90% of 100 sectors and 1.1% of 900 sectors: 100 hits in 1000 sectors = 10%.
  const std::vector<kernel_metrics> ks{kernel(2000, 90, 100), kernel(8000, 10, 900)};
  const auto total = aggregate(ks);
  EXPECT_DOUBLE_EQ(total.l2_hit_sectors, 100);
  EXPECT_DOUBLE_EQ(total.l2_sectors, 1000);
  const auto hit = derive(total, ceilings{}).l2_hit_rate_pct;
  ASSERT_TRUE(hit.ok());
  EXPECT_DOUBLE_EQ(hit.value(), 10.0);
  const double sum_of_pct = 90.0 + 100.0 * 10 / 900;
  EXPECT_NE(hit.value(), sum_of_pct) << "never the sum of percentages";
  EXPECT_NE(hit.value(), sum_of_pct / 2) << "nor their mean";
}

TEST(Aggregate, SeedStyleSumOfFourHitRatesIsImpossibleButTheTotalIsNot) {
  // Four kernels at 90% each: adding the percentages gives the seed page's 360%.
  const std::vector<kernel_metrics> ks(4, kernel(1000, 90, 100));
  double added = 0;
  for (const auto& k : ks) added += derive(k, ceilings{}).l2_hit_rate_pct.value();
  EXPECT_DOUBLE_EQ(added, 360.0);
  EXPECT_TRUE(test::has_code(check_percentage("L2 hit rate", added), "percentage_out_of_range"));
  const auto hit = derive(aggregate(ks), ceilings{}).l2_hit_rate_pct;
  ASSERT_TRUE(hit.ok());
  EXPECT_DOUBLE_EQ(hit.value(), 90.0);
}

TEST(Aggregate, SectorsPerRequestOfTotalIsRecomputedFromSums) {
  auto a = kernel(1000, 0, 0);
  a.global_load_requests = 100;
  a.global_load_sectors = 400;  // 4 per request
  auto b = kernel(1000, 0, 0);
  b.global_load_requests = 900;
  b.global_load_sectors = 28800;  // 32 per request
  const std::vector<kernel_metrics> ks{a, b};
  const auto spr = derive(aggregate(ks), ceilings{}).global_load_sectors_per_request;
  ASSERT_TRUE(spr.ok());
  EXPECT_DOUBLE_EQ(spr.value(), 29200.0 / 1000.0);
  EXPECT_LE(spr.value(), 32.0) << "the sum of ratios (36) would break invariant 5";
}

TEST(Aggregate, CountsDurationsAndFlopsAreSummed) {
  auto a = kernel(1000, 1, 2);
  a.dram_read_bytes = 1e6;
  a.flops.fp32.fma = 10;
  a.instructions_per_pipe["fma"] = 5;
  a.elapsed_cycles = 1500;
  auto b = kernel(3000, 3, 4);
  b.dram_write_bytes = 2e6;
  b.flops.fp32.add = 7;
  b.flops.tensor_bf16_flop = 1e9;
  b.instructions_per_pipe["fma"] = 6;
  b.instructions_per_pipe["tensor"] = 2;
  b.elapsed_cycles = 4500;
  const std::vector<kernel_metrics> ks{a, b};
  const auto t = aggregate(ks);
  EXPECT_DOUBLE_EQ(t.duration_ns, 4000);
  EXPECT_DOUBLE_EQ(t.dram_bytes(), 3e6);
  EXPECT_DOUBLE_EQ(flop(t.flops, flop_type::fp32), 27) << "FMA counts 2";
  EXPECT_DOUBLE_EQ(total_flop(t.flops), 1e9 + 27);
  EXPECT_DOUBLE_EQ(t.instructions_per_pipe.at("fma"), 11);
  EXPECT_DOUBLE_EQ(t.instructions_per_pipe.at("tensor"), 2);
  EXPECT_DOUBLE_EQ(t.elapsed_cycles, 6000);
  EXPECT_EQ(t.sm_count, 132u);
  EXPECT_EQ(t.demangled_name, "2 kernels");
  EXPECT_EQ(t.grid.count(), 0u) << "a launch shape means nothing for a total";
}

TEST(Aggregate, PercentagesOnlyNcuGivesAreWeightedByDuration) {
  auto a = kernel(1000, 0, 0);
  a.theoretical_occupancy_pct = 100;
  auto b = kernel(3000, 0, 0);
  b.theoretical_occupancy_pct = 50;
  auto c = kernel(5000, 0, 0);  // did not report it: left out of the weights
  const std::vector<kernel_metrics> ks{a, b, c};
  const auto t = aggregate(ks);
  ASSERT_TRUE(t.theoretical_occupancy_pct.has_value());
  EXPECT_DOUBLE_EQ(*t.theoretical_occupancy_pct, 62.5) << "(100 x 1 + 50 x 3) / 4, not 75";
  EXPECT_FALSE(t.sm_throughput_pct.has_value()) << "no kernel reported it";
}

TEST(Aggregate, AchievedOccupancyOfTotalComesFromSummedWarpsAndCycles) {
  auto a = kernel(1000, 0, 0);
  a.sm_active_cycles = 1000;
  a.warps_active = 1000 * 64 * 0.25;  // 25%
  auto b = kernel(1000, 0, 0);
  b.sm_active_cycles = 3000;
  b.warps_active = 3000 * 64 * 0.75;  // 75%
  const std::vector<kernel_metrics> ks{a, b};
  const auto occ = derive(aggregate(ks), ceilings{}).achieved_occupancy_pct;
  ASSERT_TRUE(occ.ok());
  EXPECT_DOUBLE_EQ(occ.value(), 62.5) << "weighted by active cycles, not the mean 50";
}

TEST(Aggregate, KernelsOfDifferentDevicesCannotBeAdded) {
  auto a = kernel(1000, 0, 0);
  auto b = kernel(1000, 0, 0);
  b.sm_count = 108;
  const std::vector<kernel_metrics> ks{a, b};
  EXPECT_THROW((void)aggregate(ks), kj::error);
}

TEST(Aggregate, EmptyGivesZeroTotal) {
  const auto t = aggregate(std::span<const kernel_metrics>{});
  EXPECT_DOUBLE_EQ(t.duration_ns, 0);
  EXPECT_EQ(t.demangled_name, "0 kernels");
  EXPECT_TRUE(derive(t, ceilings{}).l2_hit_rate_pct.is_missing());
}

TEST(StallBreakdown, SharesOfStallCyclesSumToHundred) {
  auto a = kernel(1000, 0, 0);
  a.stall_cycles = {{"long_scoreboard", 35789}, {"short_scoreboard", 7479}, {"mio_throttle", 56}};
  a.instructions_issued = 1000;
  auto b = kernel(1000, 0, 0);
  b.stall_cycles = {{"long_scoreboard", 20000}, {"barrier", 4000}};
  b.instructions_issued = 1000;
  const std::vector<kernel_metrics> ks{a, b};
  const auto s = break_down_stalls(aggregate(ks));
  EXPECT_DOUBLE_EQ(s.total_stall_cycles, 67324);
  double sum = 0;
  for (const auto& [reason, pct] : s.share_pct) {
    EXPECT_GE(pct, 0.0) << reason;
    EXPECT_LE(pct, 100.0) << reason;
    sum += pct;
  }
  EXPECT_NEAR(sum, 100.0, 1e-9);
  EXPECT_NEAR(s.share_pct.at("long_scoreboard"), 100.0 * 55789 / 67324, 1e-9);
  EXPECT_TRUE(check_stall_shares(s.share_pct).empty());
  // The per-instruction figure is a ratio (27.9 cycles per issued instruction here): it is what
  // the seed page printed as "long_scoreboard 3578.9%" after x100 and adding across kernels.
  EXPECT_DOUBLE_EQ(s.cycles_per_issued_instruction.at("long_scoreboard"), 55789.0 / 2000.0);
}

TEST(StallBreakdown, NoStallCyclesGiveNoShares) {
  const auto s = break_down_stalls({}, 100);
  EXPECT_TRUE(s.share_pct.empty());
  const auto d = derive(kernel(1000, 0, 0), ceilings{});
  EXPECT_TRUE(d.stall_share_pct.is_missing());
}

}  // namespace
}  // namespace kj::profile
