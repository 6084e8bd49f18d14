// Derived metrics from counters and ceilings, and the bottleneck class by the 60% rule.

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/aggregate.hpp>
#include <kjudge/profile/derive.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

using test::has_code;

constexpr double tb = 1e12;

/** H100-like roofs as the seed page should have used them (dense peaks). */
ceilings h100() {
  ceilings c;
  c.l1 = {25 * tb, 0, 32 << 10};
  c.l2 = {9 * tb, 0, 16 << 20};
  c.dram = {2.9 * tb, 3.35 * tb, 1ull << 30};
  c.at(flop_type::fp32) = {51.85 * tb, 67 * tb};
  c.at(flop_type::tensor_fp16) = {758.77 * tb, 989.4 * tb};
  return c;
}

kernel_metrics base_kernel() {
  kernel_metrics k;
  k.name = "_Z9fused_kerPKfS0_Pf";
  k.demangled_name = "fused_ker(const float*, const float*, float*)";
  k.duration_ns = 10'000;  // 10 us
  k.sm_count = 132;
  k.max_warps_per_sm = 64;
  return k;
}

TEST(Derive, AThroughputWithinTheToleranceOfAMeasuredCeilingReads100Percent) {
  // L2 has only a measured ceiling (9 TB/s here); a rate may pass it by 5% (invariant 6),
  // and its percentage, 102%, failed invariant 3: memory throughput then failed with it.
  auto k = base_kernel();
  k.l2_sectors = 9.18 * tb * 10e-6 / 32;  // 9.18 TB/s in 10 us: 102% of the ceiling
  const auto d = derive(k, h100());
  ASSERT_TRUE(d.l2_bytes_per_s.ok()) << d.l2_bytes_per_s.failure().message;
  ASSERT_TRUE(d.l2_throughput_pct.ok()) << d.l2_throughput_pct.failure().message;
  EXPECT_DOUBLE_EQ(d.l2_throughput_pct.value(), 100.0);
  // Past the tolerance, the rate fails (and its percentage with it).
  k.l2_sectors = 9.9 * tb * 10e-6 / 32;
  EXPECT_FALSE(derive(k, h100()).l2_throughput_pct.ok());
}

TEST(Derive, BandwidthHitRatesAndSectorsFromCounts) {
  auto k = base_kernel();
  k.dram_read_bytes = 20e6;
  k.dram_write_bytes = 5e6;  // 25 MB in 10 us = 2.5 TB/s
  k.l2_sectors = 1e6;
  k.l2_hit_sectors = 0.25e6;
  k.l1_sectors = 2e6;
  k.l1_hit_sectors = 1e6;
  k.global_load_requests = 1000;
  k.global_load_sectors = 4000;
  k.global_store_requests = 500;
  k.global_store_sectors = 2000;
  const auto d = derive(k, h100());
  EXPECT_DOUBLE_EQ(d.dram_bytes_per_s.value(), 2.5 * tb);
  EXPECT_DOUBLE_EQ(d.l2_bytes_per_s.value(), 1e6 * 32 / 10e-6);
  EXPECT_DOUBLE_EQ(d.l1_bytes_per_s.value(), 2e6 * 32 / 10e-6);
  EXPECT_DOUBLE_EQ(d.l2_hit_rate_pct.value(), 25.0);
  EXPECT_DOUBLE_EQ(d.l1_hit_rate_pct.value(), 50.0);
  EXPECT_DOUBLE_EQ(d.global_load_sectors_per_request.value(), 4.0);
  EXPECT_DOUBLE_EQ(d.global_store_sectors_per_request.value(), 4.0);
  EXPECT_NEAR(d.dram_throughput_pct.value(), 100.0 * 2.5 / 3.35, 1e-9)
      << "against the datasheet roof";
  EXPECT_TRUE(d.flags().empty());
}

TEST(Derive, HitsAboveSectorsGiveAFlagNotANumber) {
  // ncu's hit and sector counters come from different replay passes: on the H200 the sweep saw
  // a cuBLAS GEMM with 101.2% (ncu's own lts__t_sector_hit_rate.pct is the same ratio). No
  // number, a warning that names the counts.
  auto k = base_kernel();
  for (const double hits : {1012.0, 1100.0}) {
    k.l2_sectors = 1000;
    k.l2_hit_sectors = hits;
    const auto d = derive(k, h100());
    ASSERT_FALSE(d.l2_hit_rate_pct.ok()) << hits;
    EXPECT_EQ(d.l2_hit_rate_pct.failure().code, "hit_counters_inconsistent");
    EXPECT_EQ(d.l2_hit_rate_pct.failure().severity, severity_warning);
    EXPECT_NE(d.l2_hit_rate_pct.failure().message.find("1000 sectors"), std::string::npos)
        << d.l2_hit_rate_pct.failure().message;
    EXPECT_THROW((void)d.l2_hit_rate_pct.value(), kj::error);
    EXPECT_TRUE(has_code(d.flags(), "hit_counters_inconsistent"));
  }
  // Far above: broken counters (a wrong column, a unit), invariant 3's error.
  k.l2_hit_sectors = 3602;  // 360.2%
  const auto broken = derive(k, h100());
  ASSERT_FALSE(broken.l2_hit_rate_pct.ok());
  EXPECT_EQ(broken.l2_hit_rate_pct.failure().code, "percentage_out_of_range");
  EXPECT_EQ(broken.l2_hit_rate_pct.failure().severity, severity_error);
  k.l1_sectors = 1000;
  k.l1_hit_sectors = 1001;
  EXPECT_EQ(derive(k, h100()).l1_hit_rate_pct.failure().code, "hit_counters_inconsistent");
  k.l1_hit_sectors = -5;  // a negative count is no collection noise: invariant 3's error
  EXPECT_EQ(derive(k, h100()).l1_hit_rate_pct.failure().code, "percentage_out_of_range");
  k.l1_hit_sectors = 1000;  // exactly every sector: 100%, a number
  EXPECT_DOUBLE_EQ(derive(k, h100()).l1_hit_rate_pct.value(), 100.0);
}

TEST(Derive, OccupancyAboveTheMaximumIsStillAnError) {
  auto k = base_kernel();
  k.sm_active_cycles = 1000;
  k.warps_active = 100.0 * k.sm_active_cycles * k.max_warps_per_sm;  // 10000%
  const auto d = derive(k, h100());
  ASSERT_FALSE(d.achieved_occupancy_pct.ok());
  EXPECT_EQ(d.achieved_occupancy_pct.failure().code, "percentage_out_of_range");
  EXPECT_EQ(d.achieved_occupancy_pct.failure().severity, severity_error);
}

TEST(Derive, SeedSectorsPerRequestFromCountsIsFlagged) {
  auto k = base_kernel();
  k.global_load_requests = 100;
  k.global_load_sectors = 3998;
  const auto d = derive(k, h100());
  ASSERT_FALSE(d.global_load_sectors_per_request.ok());
  EXPECT_EQ(d.global_load_sectors_per_request.failure().code, "sectors_per_request_out_of_range");
}

TEST(Derive, MissingInputsAreNoDataNotZeroAndRaiseNoFlag) {
  auto k = base_kernel();
  const auto d = derive(k, ceilings{});
  EXPECT_TRUE(d.l2_hit_rate_pct.is_missing());
  EXPECT_TRUE(d.global_load_sectors_per_request.is_missing());
  EXPECT_TRUE(d.achieved_occupancy_pct.is_missing());
  EXPECT_TRUE(d.theoretical_occupancy_pct.is_missing());
  EXPECT_TRUE(d.dram_throughput_pct.is_missing()) << "no roof";
  EXPECT_TRUE(d.arithmetic_intensity_flop_per_byte.is_missing());
  EXPECT_TRUE(d.flags().empty()) << "no_data is not a problem to report";
  EXPECT_EQ(d.bound.bound, bottleneck::unknown);
  k.duration_ns = 0;
  EXPECT_TRUE(derive(k, h100()).dram_bytes_per_s.is_missing());
}

TEST(Derive, OccupancyAndSmBusyFromWarpsAndCycles) {
  auto k = base_kernel();
  k.sm_active_cycles = 132 * 10'000.0;
  k.elapsed_cycles = 20'000;
  k.warps_active = k.sm_active_cycles * 64 * 0.572;
  k.theoretical_occupancy_pct = 62.5;
  const auto d = derive(k, h100());
  EXPECT_NEAR(d.achieved_occupancy_pct.value(), 57.2, 1e-9);
  EXPECT_DOUBLE_EQ(d.theoretical_occupancy_pct.value(), 62.5);
  EXPECT_DOUBLE_EQ(d.sm_busy_pct.value(), 50.0);
  k.theoretical_occupancy_pct = 120;
  EXPECT_FALSE(derive(k, h100()).theoretical_occupancy_pct.ok());
}

TEST(Derive, FlopRatesCountFmaTwiceAndIntensityUsesDramBytes) {
  auto k = base_kernel();
  k.flops.fp32.fma = 100e6;  // 200 MFLOP
  k.flops.fp32.add = 50e6;   // 250 MFLOP in 10 us = 25 TFLOP/s
  k.dram_read_bytes = 5e6;
  const auto d = derive(k, h100());
  EXPECT_DOUBLE_EQ(d.flops(flop_type::fp32).value(), 25 * tb);
  EXPECT_NEAR(d.flop_pct(flop_type::fp32).value(), 100.0 * 25 / 67, 1e-9);
  EXPECT_DOUBLE_EQ(d.flops(flop_type::fp64).value(), 0.0) << "an idle pipe does 0 FLOP/s";
  EXPECT_DOUBLE_EQ(d.arithmetic_intensity_flop_per_byte.value(), 250e6 / 5e6);
}

TEST(Derive, FlopsAbovePeakFailTheComputeThroughputAndTheClass) {
  auto k = base_kernel();
  k.flops.fp32.fma = 400e6;  // 80 TFLOP/s > 67
  const auto d = derive(k, h100());
  ASSERT_FALSE(d.flops(flop_type::fp32).ok());
  EXPECT_EQ(d.flops(flop_type::fp32).failure().code, "flops_above_peak");
  EXPECT_FALSE(d.compute_throughput_pct.ok());
  EXPECT_EQ(d.bound.bound, bottleneck::unknown) << "no class from a broken number";
}

TEST(Derive, StallSharesAndPerInstructionRatiosAreSeparate) {
  auto k = base_kernel();
  k.stall_cycles = {{"long_scoreboard", 600}, {"short_scoreboard", 300}, {"barrier", 100}};
  k.instructions_issued = 20;
  const auto d = derive(k, h100());
  ASSERT_TRUE(d.stall_share_pct.ok());
  EXPECT_DOUBLE_EQ(d.stall_share_pct.value().at("long_scoreboard"), 60.0);
  ASSERT_TRUE(d.stall_cycles_per_issued_instruction.ok());
  EXPECT_DOUBLE_EQ(d.stall_cycles_per_issued_instruction.value().at("long_scoreboard"), 30.0);
  k.stall_cycles["long_scoreboard"] = -2000;  // broken input: negative share
  EXPECT_FALSE(derive(k, h100()).stall_share_pct.ok());
}

// Rule 16 -------------------------------------------------------------------------------------

TEST(Classify, SixtyPercentRule) {
  EXPECT_EQ(classify(75, 20), bottleneck::compute_bound);
  EXPECT_EQ(classify(20, 80), bottleneck::memory_bound);
  EXPECT_EQ(classify(70, 85), bottleneck::memory_bound) << "both high: the larger";
  EXPECT_EQ(classify(60, 0), bottleneck::compute_bound) << "the threshold is inclusive";
  EXPECT_EQ(classify(59.9, 59.9), bottleneck::latency_bound);
}

TEST(Classify, SeedComputeBoundAt16_7PercentIsLatencyBound) {
  EXPECT_EQ(classify(16.7, 4.2), bottleneck::latency_bound);
  // The same from counters: 16.7% of the 67 TFLOP/s FP32 roof and 4.2% of 3.35 TB/s DRAM.
  auto k = base_kernel();
  k.flops.fp32.fma = 0.167 * 67e12 * 10e-6 / 2;
  k.dram_read_bytes = 0.042 * 3.35e12 * 10e-6;
  const auto d = derive(k, h100());
  EXPECT_NEAR(d.compute_throughput_pct.value(), 16.7, 1e-9);
  EXPECT_NEAR(d.memory_throughput_pct.value(), 4.2, 0.2);
  EXPECT_EQ(d.bound.bound, bottleneck::latency_bound);
  EXPECT_NE(d.bound.reason.find("16.7%"), std::string::npos) << d.bound.reason;
  EXPECT_EQ(to_string(d.bound.bound), "latency-bound");
}

TEST(Classify, NcuSolPercentagesCountAsThroughputs) {
  auto k = base_kernel();
  k.sm_throughput_pct = 16.87;
  k.memory_throughput_pct = 4.14;
  EXPECT_EQ(derive(k, h100()).bound.bound, bottleneck::latency_bound);
  k.memory_throughput_pct = 82;
  EXPECT_EQ(derive(k, h100()).bound.bound, bottleneck::memory_bound);
}

TEST(Classify, MissingThroughputDecidesOnlyWhenTheOtherReachesSixty) {
  const auto missing = checked<double>::missing("no roof");
  EXPECT_EQ(classify(missing, checked<double>::pass(80)).bound, bottleneck::memory_bound);
  EXPECT_EQ(classify(missing, checked<double>::pass(20)).bound, bottleneck::unknown);
  EXPECT_EQ(classify(checked<double>::pass(65), missing).bound, bottleneck::compute_bound);
}

TEST(Classify, SparsePeakUsedAsDenseHalvesTheThroughputAndHidesComputeBound) {
  auto k = base_kernel();
  k.flops.tensor_fp16_flop = 700e12 * 10e-6;  // 700 TFLOP/s
  EXPECT_EQ(derive(k, h100()).bound.bound, bottleneck::compute_bound) << "70.7% of 989.4";
  auto sparse = h100();
  sparse.at(flop_type::tensor_fp16).datasheet_dense_flop_per_s = 1979 * tb;
  EXPECT_EQ(derive(k, sparse).bound.bound, bottleneck::latency_bound) << "35.4% of 1979";
}

TEST(ClassifyForward, LaunchGapsDominatingMakeItLaunchBound) {
  EXPECT_TRUE(launch_gaps_dominate(microseconds(9.2), microseconds(38.4)));
  EXPECT_FALSE(launch_gaps_dominate(microseconds(20), microseconds(40))) << "exactly 50%";
  EXPECT_FALSE(launch_gaps_dominate(microseconds(9.2), nanoseconds(0))) << "unknown";

  // Five kernels of 1.84 us each, their total latency-bound (SM 16.7%, memory 4.2%).
  std::vector<kernel_metrics> kernels;
  for (int i = 0; i < 5; ++i) {
    auto k = base_kernel();
    k.duration_ns = 1840;
    k.sm_throughput_pct = 16.7;
    k.memory_throughput_pct = 4.2;
    kernels.push_back(k);
  }
  const auto total = derive(aggregate(kernels), h100()).bound;
  ASSERT_EQ(total.bound, bottleneck::latency_bound);
  const auto c =
      classify_forward(nanoseconds(kernel_time_sum_ns(kernels)), microseconds(38.4), total);
  EXPECT_EQ(c.bound, bottleneck::launch_bound);
  EXPECT_NE(c.reason.find("9.20 us"), std::string::npos) << c.reason;
  // Kernels busy 92% of 10 us: the class of the total.
  EXPECT_EQ(
      classify_forward(nanoseconds(kernel_time_sum_ns(kernels)), microseconds(10), total).bound,
      bottleneck::latency_bound);
}

}  // namespace
}  // namespace kj::profile
