// Every invariant of docs/measurement-rules.md that applies to counters, ceilings and device
// records: a passing case, hand-made violations, and the seed page's exact wrong numbers
// (anchors.md).

#include <gtest/gtest.h>

#include <kjudge/profile/invariants.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

using test::codes;
using test::find_code;
using test::has_code;

constexpr double tb = 1e12;  // bytes/s or FLOP/s per TB/s or TFLOP/s
constexpr double gb = 1e9;

// Invariant 3 -------------------------------------------------------------------------------

TEST(Invariant3Percentages, WithinZeroToHundredPass) {
  for (double pct : {0.0, 4.2, 57.2, 100.0}) EXPECT_TRUE(check_percentage("x", pct).empty()) << pct;
}

TEST(Invariant3Percentages, SeedL2HitRateOf360IsFlagged) {
  for (double pct : {360.19, 358.76}) {
    const auto flags = check_percentage("L2 hit rate", pct);
    ASSERT_EQ(codes(flags), std::vector<std::string>{"percentage_out_of_range"}) << pct;
    EXPECT_EQ(flags[0].severity, "error");
    EXPECT_NE(flags[0].message.find("L2 hit rate"), std::string::npos);
    EXPECT_NE(flags[0].message.find("[0, 100]"), std::string::npos);
  }
}

TEST(Invariant3Percentages, NegativeAndJustAboveHundredAreFlagged) {
  EXPECT_TRUE(has_code(check_percentage("occupancy", -1.0), "percentage_out_of_range"));
  EXPECT_TRUE(has_code(check_percentage("occupancy", 100.5), "percentage_out_of_range"));
  EXPECT_TRUE(check_percentage("occupancy", 100.01).empty()) << "rounding slack";
}

// Invariant 4 -------------------------------------------------------------------------------

TEST(Invariant4StallShares, SharesSummingToHundredPass) {
  EXPECT_TRUE(check_stall_shares(
                  {{"long_scoreboard", 61.5}, {"short_scoreboard", 30.0}, {"mio_throttle", 8.5}})
                  .empty());
  EXPECT_TRUE(check_stall_shares({{"barrier", 99.5}}).empty()) << "within +-1";
  EXPECT_TRUE(check_stall_shares({}).empty());
}

TEST(Invariant4StallShares, SeedLongScoreboard3578PercentIsFlagged) {
  // The seed page: per-instruction ratios shown as percentages and added across kernels.
  const auto flags = check_stall_shares(
      {{"long_scoreboard", 3578.9}, {"short_scoreboard", 747.9}, {"mio_throttle", 5.6}});
  EXPECT_TRUE(has_code(flags, "stall_shares_not_100"));
  EXPECT_EQ(std::count_if(flags.begin(), flags.end(),
                          [](const flag& f) { return f.code == "percentage_out_of_range"; }),
            2)
      << "long_scoreboard and short_scoreboard are each above 100";
  EXPECT_NE(find_code(flags, "stall_shares_not_100")->message.find("4332.4"), std::string::npos)
      << find_code(flags, "stall_shares_not_100")->message;
}

TEST(Invariant4StallShares, SharesNotSummingToHundredAreFlagged) {
  EXPECT_EQ(codes(check_stall_shares({{"a", 50.0}, {"b", 45.0}})),
            std::vector<std::string>{"stall_shares_not_100"});
  EXPECT_EQ(codes(check_stall_shares({{"a", 60.0}, {"b", 41.5}})),
            std::vector<std::string>{"stall_shares_not_100"});
}

// Invariant 5 -------------------------------------------------------------------------------

TEST(Invariant5SectorsPerRequest, OneToThirtyTwoPass) {
  for (double v : {1.0, 4.0, 8.0, 32.0})
    EXPECT_TRUE(check_sectors_per_request("global load", v).empty()) << v;
}

TEST(Invariant5SectorsPerRequest, SeedValueOf39_98IsFlagged) {
  const auto flags = check_sectors_per_request("global load", 39.98);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"sectors_per_request_out_of_range"});
  EXPECT_NE(flags[0].message.find("39.98"), std::string::npos);
  EXPECT_TRUE(
      has_code(check_sectors_per_request("global load", 0.5), "sectors_per_request_out_of_range"));
}

TEST(Invariant5SectorsPerRequest, StoresHaveOnlyTheUpperBound) {
  // Recorded on the H200 (PyTorch's reduce_kernel in max_with_indices.py, 2026-11-30): ncu
  // counted more global store requests than sectors written.
  EXPECT_TRUE(check_sectors_per_request("global store", 0.99, 0.0).empty());
  EXPECT_TRUE(check_sectors_per_request("global store", 32.0, 0.0).empty());
  EXPECT_TRUE(has_code(check_sectors_per_request("global store", 33.0, 0.0),
                       "sectors_per_request_out_of_range"));
  EXPECT_TRUE(has_code(check_sectors_per_request("global store", -1.0, 0.0),
                       "sectors_per_request_out_of_range"));
}

// Invariant 6 -------------------------------------------------------------------------------

const bandwidth_ceiling h200_dram{3.9 * tb, 4.8 * tb, 1ull << 30};

TEST(Invariant6Bandwidth, AchievedBelowCeilingPasses) {
  EXPECT_TRUE(check_bandwidth("DRAM", 3.0 * tb, h200_dram).empty());
  EXPECT_TRUE(check_bandwidth("DRAM", 4.0 * tb, h200_dram).empty()) << "within 1.05 x measured";
  EXPECT_TRUE(check_bandwidth_ceiling("DRAM", h200_dram).empty());
  EXPECT_TRUE(check_bandwidth("L2", 50 * tb, bandwidth_ceiling{}).empty()) << "no ceiling known";
}

TEST(Invariant6Bandwidth, AchievedAboveMeasuredCeilingIsFlagged) {
  const auto flags = check_bandwidth("DRAM", 4.2 * tb, h200_dram);  // > 1.05 x 3.9
  ASSERT_EQ(codes(flags), std::vector<std::string>{"bandwidth_above_ceiling"});
  EXPECT_NE(flags[0].message.find("4.20 TB/s"), std::string::npos) << flags[0].message;
  EXPECT_NE(flags[0].message.find("3.90 TB/s"), std::string::npos) << flags[0].message;
}

TEST(Invariant6Bandwidth, AchievedAboveDatasheetIsFlagged) {
  const auto flags = check_bandwidth("DRAM", 5.0 * tb, h200_dram);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"bandwidth_above_ceiling"});
  EXPECT_NE(flags[0].message.find("datasheet"), std::string::npos);
}

TEST(Invariant6Bandwidth, MeasuredCeilingAboveDatasheetIsFlagged) {
  EXPECT_EQ(codes(check_bandwidth_ceiling("DRAM", {5.1 * tb, 4.8 * tb, 0})),
            std::vector<std::string>{"ceiling_above_datasheet"});
}

// Invariant 7 -------------------------------------------------------------------------------

ceilings h200_ceilings() {
  ceilings c;
  c.l1 = {30 * tb, 0, 32 << 10};
  c.l2 = {10 * tb, 0, 16 << 20};
  c.dram = h200_dram;
  c.at(flop_type::fp32) = {51.85 * tb, 67 * tb};
  c.at(flop_type::tensor_fp16) = {758.77 * tb, 989.4 * tb};
  c.at(flop_type::tensor_bf16) = {790 * tb, 989.4 * tb};
  return c;
}

TEST(Invariant7CeilingOrder, OrderedCeilingsPass) {
  EXPECT_TRUE(check_ceiling_order(h200_ceilings()).empty());
  EXPECT_TRUE(check_ceilings(h200_ceilings()).empty());
}

TEST(Invariant7CeilingOrder, SeedL1BelowL2IsFlagged) {
  ceilings seed;  // the seed page's ert_roofline on an H100
  seed.l1.measured_bytes_per_s = 13.6 * gb;
  seed.l2.measured_bytes_per_s = 927.6 * gb;
  seed.dram.measured_bytes_per_s = 2577.3 * gb;
  const auto flags = check_ceiling_order(seed);
  ASSERT_EQ(codes(flags),
            (std::vector<std::string>{"ceilings_out_of_order", "ceilings_out_of_order"}))
      << "L1 < L2 and L2 < DRAM";
  EXPECT_NE(flags[0].message.find("13.6 GB/s"), std::string::npos) << flags[0].message;
  EXPECT_NE(flags[0].message.find("927.6 GB/s"), std::string::npos) << flags[0].message;
  EXPECT_NE(flags[0].message.find("launch latency"), std::string::npos);
}

TEST(Invariant7CeilingOrder, UnknownLevelsAreNotCompared) {
  ceilings c;
  c.l1.measured_bytes_per_s = 0;  // not measured
  c.l2.measured_bytes_per_s = 10 * tb;
  c.dram.measured_bytes_per_s = 3.9 * tb;
  EXPECT_TRUE(check_ceiling_order(c).empty());
  c.dram.measured_bytes_per_s = 12 * tb;
  EXPECT_EQ(codes(check_ceiling_order(c)), std::vector<std::string>{"ceilings_out_of_order"});
}

// Invariant 8 and rule 15 --------------------------------------------------------------------

TEST(Invariant8Flops, AchievedBelowDensePeakPasses) {
  EXPECT_TRUE(check_flop_rate(flop_type::fp32, 50 * tb, {51.85 * tb, 67 * tb}).empty());
  EXPECT_TRUE(check_flop_rate(flop_type::fp32, 54 * tb, {51.85 * tb, 0}).empty())
      << "within 1.05 x the measured rate when no datasheet peak is known";
}

TEST(Invariant8Flops, AchievedAboveDensePeakIsFlagged) {
  const auto flags = check_flop_rate(flop_type::tensor_bf16, 1000 * tb, {790 * tb, 989.4 * tb});
  ASSERT_EQ(codes(flags), std::vector<std::string>{"flops_above_peak"});
  EXPECT_NE(flags[0].message.find("989.4 TFLOP/s"), std::string::npos) << flags[0].message;
  EXPECT_EQ(codes(check_flop_rate(flop_type::fp32, 60 * tb, {51.85 * tb, 0})),
            std::vector<std::string>{"flops_above_peak"});
}

TEST(Invariant8Flops, SeedSparseFp16PeakUsedAsDenseIsFlagged) {
  // The seed page used 1979 TFLOP/s ("with sparsity") as the FP16 peak of an H100.
  const auto flags = check_dense_peak(flop_type::tensor_fp16, 1979 * tb, 989.4 * tb);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"sparse_peak"});
  EXPECT_NE(flags[0].message.find("2.00 x"), std::string::npos) << flags[0].message;
  EXPECT_TRUE(check_dense_peak(flop_type::tensor_fp16, 989.4 * tb, 989.4 * tb).empty());
  // Without a datasheet to compare, the measured rate (758.77) under half the "dense" peak gives
  // it away.
  ceilings c = h200_ceilings();
  c.at(flop_type::tensor_fp16).datasheet_dense_flop_per_s = 1979 * tb;
  const auto ceiling_flags = check_ceilings(c);
  ASSERT_EQ(codes(ceiling_flags), std::vector<std::string>{"peak_maybe_sparse"});
  EXPECT_EQ(ceiling_flags[0].severity, "warning");
}

TEST(Invariant8Flops, MeasuredRateAboveDatasheetIsFlagged) {
  EXPECT_EQ(codes(check_compute_ceiling(flop_type::fp32, {70 * tb, 67 * tb})),
            std::vector<std::string>{"ceiling_above_datasheet"});
}

// Invariant 10 ------------------------------------------------------------------------------

constexpr std::uint64_t h200_memory = 141ull << 30;

TEST(Invariant10PeakMemory, BetweenOutputsAndDeviceMemoryPasses) {
  EXPECT_TRUE(check_peak_memory(4 << 20, 256 << 10, h200_memory).empty());
  EXPECT_TRUE(check_peak_memory(256 << 10, 256 << 10, 0).empty()) << "device size unknown";
}

TEST(Invariant10PeakMemory, BelowOutputsOrAboveDeviceIsFlagged) {
  EXPECT_EQ(codes(check_peak_memory(1000, 262144, h200_memory)),
            std::vector<std::string>{"peak_memory_below_outputs"});
  EXPECT_EQ(codes(check_peak_memory(h200_memory + 1, 262144, h200_memory)),
            std::vector<std::string>{"peak_memory_above_device"});
}

// Invariant 11 ------------------------------------------------------------------------------

TEST(Invariant11Launches, CudaCandidateWithKernelsPasses) {
  EXPECT_TRUE(check_launches(true, 5).empty());
  EXPECT_TRUE(check_launches(false, 0).empty()) << "a CPU candidate launches nothing";
}

TEST(Invariant11Launches, CudaCandidateWithoutKernelsIsFlaggedEvenWithCopies) {
  const auto flags = check_launches(true, 0, 3, 1);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"no_kernel_launched"});
  EXPECT_NE(flags[0].message.find("3 memcpy"), std::string::npos) << flags[0].message;
}

// Invariant 1 -------------------------------------------------------------------------------

TEST(Invariant1KernelTime, RealisticKernelTimesPass) {
  EXPECT_TRUE(check_kernel_time("k", microseconds(9.2)).empty());
  EXPECT_TRUE(check_kernel_time("k", nanoseconds(500)).empty());
}

TEST(Invariant1KernelTime, SubHalfMicrosecondKernelIsFlagged) {
  // The seed page's "0.04 us" was milliseconds labelled as microseconds.
  const auto flags = check_kernel_time("fused_kernel", microseconds(0.04));
  ASSERT_EQ(codes(flags), std::vector<std::string>{"impossible_kernel_time"});
  EXPECT_NE(flags[0].message.find("0.040 us"), std::string::npos) << flags[0].message;
  EXPECT_NE(flags[0].message.find("fused_kernel"), std::string::npos);
}

TEST(Invariant1ForwardTime, EagerForwardNoFasterThanItsLaunches) {
  // Anchors: the eager reference runs 14 kernels in 28.7 us of GPU time.
  EXPECT_TRUE(check_forward_time("device", microseconds(28.7), 14, true).empty());
  const auto flags = check_forward_time("device", microseconds(3.0), 5, true);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"faster_than_launches"});
  EXPECT_NE(flags[0].message.find("5 kernel launches"), std::string::npos) << flags[0].message;
  EXPECT_TRUE(check_forward_time("device", microseconds(3.0), 5, false).empty())
      << "a replayed graph is not bound by host launches";
  EXPECT_TRUE(check_forward_time("device", nanoseconds(0), 5, true).empty()) << "not measured";
}

TEST(Invariant1ForwardTime, UnderTwoMicrosecondsIsMarkedForReview) {
  const auto flags = check_forward_time("device", microseconds(1.5), 1, true);
  ASSERT_EQ(codes(flags), std::vector<std::string>{"very_fast_forward"});
  EXPECT_EQ(flags[0].severity, "info");
}

// Invariant 2 -------------------------------------------------------------------------------

TEST(Invariant2EventTime, EventBetweenKernelSumAndHostWallPasses) {
  // Anchors: seed candidate 38.4 us stream, 52.4 us host wall, 9.2 us of kernels.
  EXPECT_TRUE(check_event_time(microseconds(38.4), microseconds(9.2), microseconds(52.4)).empty());
  EXPECT_TRUE(check_event_time(microseconds(9.0), microseconds(9.2), microseconds(0)).empty())
      << "0.9 x kernel sum is enough; host wall unknown";
}

TEST(Invariant2EventTime, EventBelowKernelSumIsFlagged) {
  const auto flags = check_event_time(microseconds(5.0), microseconds(9.2), microseconds(52.4));
  ASSERT_EQ(codes(flags), std::vector<std::string>{"kernels_outside_timed_region"});
  EXPECT_NE(flags[0].message.find("9.20 us"), std::string::npos) << flags[0].message;
}

TEST(Invariant2EventTime, EventAboveHostWallIsFlagged) {
  EXPECT_EQ(codes(check_event_time(microseconds(60.0), microseconds(9.2), microseconds(52.4))),
            std::vector<std::string>{"event_exceeds_wall"});
}

}  // namespace
}  // namespace kj::profile
