// The clock monitor's reductions without a GPU: the spread of a run's readings, the timing
// engine's clock_record (reference clock fallback, "gpu_idle" dropped) and an unavailable monitor.
// NVML readings themselves need a GPU; these tests feed the observations NVML would give.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <kjudge/measure/clock_monitor.hpp>

namespace kj::measure::detail {
namespace {

TEST(ClockSpread, MinMedianAndMaxOfTheReadings) {
  // An H200 run that dipped once (sw_power_cap) among readings at its 1980 MHz default.
  const std::vector<double> readings_mhz{1980, 1755, 1980, 1965};
  const auto s = spread_of(readings_mhz);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->readings, 4u);
  EXPECT_DOUBLE_EQ(s->min_mhz, 1755);
  EXPECT_DOUBLE_EQ(s->median_mhz, 1972.5);
  EXPECT_DOUBLE_EQ(s->max_mhz, 1980);
}

TEST(ClockSpread, NoReadingsNoSpread) {
  EXPECT_FALSE(spread_of(std::vector<double>{}).has_value());
}

clock_observations h200_observations() {
  clock_observations seen;
  seen.available = true;
  seen.source = "nvml";
  seen.spread = clock_spread{3, 1755, 1980, 1980};
  seen.default_sm_mhz = 1980;
  seen.max_sm_mhz = 1980;
  seen.reasons = {"gpu_idle", "sw_power_cap"};
  return seen;
}

TEST(ClockRecord, KeepsTheTimingEnginesFieldsAndDropsGpuIdle) {
  const clock_record r = to_record(h200_observations());
  EXPECT_TRUE(r.available);
  EXPECT_EQ(r.source, "nvml");
  EXPECT_DOUBLE_EQ(r.default_sm_mhz, 1980);
  EXPECT_DOUBLE_EQ(r.max_sm_mhz, 1980);
  EXPECT_DOUBLE_EQ(r.median_sm_mhz, 1980);
  EXPECT_DOUBLE_EQ(r.min_sm_mhz, 1755);
  EXPECT_EQ(r.throttle_reasons, std::vector<std::string>{"sw_power_cap"});
}

TEST(ClockRecord, ReferenceClockFallsBackToTheMaximum) {
  auto seen = h200_observations();
  seen.default_sm_mhz.reset();  // NVML did not answer (a MIG instance, say)
  seen.max_sm_mhz = 1980;
  EXPECT_DOUBLE_EQ(to_record(seen).default_sm_mhz, 1980);
  seen.default_sm_mhz = 0;  // answered, but 0
  EXPECT_DOUBLE_EQ(to_record(seen).default_sm_mhz, 1980);
  seen.max_sm_mhz.reset();
  EXPECT_DOUBLE_EQ(to_record(seen).default_sm_mhz, 0);
  EXPECT_DOUBLE_EQ(to_record(seen).max_sm_mhz, 0);
}

TEST(ClockRecord, NoReadingsLeaveTheClocksAtZero) {
  auto seen = h200_observations();
  seen.spread.reset();
  const clock_record r = to_record(seen);
  EXPECT_DOUBLE_EQ(r.median_sm_mhz, 0);
  EXPECT_DOUBLE_EQ(r.min_sm_mhz, 0);
}

TEST(ClockMonitor, UnavailableReadsNothingAndSaysWhy) {
  auto m = clock_monitor::unavailable("not recorded: GPU timing is off");
  EXPECT_FALSE(m.available());
  EXPECT_FALSE(m.read().has_value());
  EXPECT_FALSE(m.throttled(100, 0.75));
  const clock_observations seen = m.observations();
  EXPECT_FALSE(seen.available);
  EXPECT_EQ(seen.source, "not recorded: GPU timing is off");
  EXPECT_FALSE(seen.spread.has_value());
  EXPECT_FALSE(seen.default_sm_mhz.has_value());
  EXPECT_FALSE(seen.max_sm_mhz.has_value());
  EXPECT_TRUE(seen.reasons.empty());
  const clock_record r = m.record();
  EXPECT_FALSE(r.available);
  EXPECT_EQ(r.source, "not recorded: GPU timing is off");
  EXPECT_DOUBLE_EQ(r.default_sm_mhz, 0);
}

}  // namespace
}  // namespace kj::measure::detail
