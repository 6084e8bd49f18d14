// checked<T>: a metric is either a number that passed its check or the flag saying why not.

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/format.hpp>
#include <kjudge/profile/invariants.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

TEST(Checked, PassingMetricGivesItsNumber) {
  const auto c = checked<double>::pass(57.2);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c.value(), 57.2);
  EXPECT_TRUE(c.flags().empty());
  EXPECT_THROW((void)c.failure(), kj::error);
}

TEST(Checked, FailedMetricNeverYieldsANumber) {
  const auto c = check_metric(360.19, [](double v) { return check_percentage("L2 hit rate", v); });
  ASSERT_FALSE(c.ok());
  EXPECT_FALSE(static_cast<bool>(c));
  EXPECT_THROW((void)c.value(), kj::error) << "reading a failed metric as a number must throw";
  EXPECT_EQ(c.failure().code, "percentage_out_of_range");
  EXPECT_EQ(c.failure().severity, "error");
  EXPECT_NE(c.failure().message.find("360.2"), std::string::npos) << c.failure().message;
  EXPECT_FALSE(c.is_missing());
}

TEST(Checked, DefaultAndMissingAreNoDataNotZero) {
  const checked<double> d;
  EXPECT_FALSE(d.ok());
  EXPECT_TRUE(d.is_missing());
  const auto m = checked<double>::missing("no sectors");
  EXPECT_TRUE(m.is_missing());
  EXPECT_EQ(m.failure().code, no_data_code);
  EXPECT_EQ(m.failure().severity, "info");
  EXPECT_THROW((void)m.value(), kj::error);
}

TEST(Checked, ErrorsComeFirstAndNotesTravelWithAPassingValue) {
  const flag note{"peak_maybe_sparse", "warning", "w"};
  const flag err{"flops_above_peak", "error", "e"};
  const auto failed = make_checked(1.0, {note, err});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.failure().code, "flops_above_peak");
  EXPECT_EQ(test::codes(failed.flags()),
            (std::vector<std::string>{"flops_above_peak", "peak_maybe_sparse"}));

  const auto passed = make_checked(2.0, {note});
  ASSERT_TRUE(passed.ok());
  EXPECT_DOUBLE_EQ(passed.value(), 2.0);
  EXPECT_EQ(test::codes(passed.flags()), (std::vector<std::string>{"peak_maybe_sparse"}));
  EXPECT_THROW((void)checked<double>::pass(1.0, {err}), kj::error)
      << "a passing metric cannot carry an error";
}

TEST(Checked, AddingAnErrorFlagDropsTheNumber) {
  auto c = checked<double>::pass(4.0);
  c = add_flag(std::move(c), {"x", "info", "note"});
  EXPECT_TRUE(c.ok());
  c = add_flag(std::move(c), {"y", "error", "broken"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.failure().code, "y");
  EXPECT_EQ(c.flags().size(), 2u);
}

TEST(Checked, JsonOfAFailedMetricIsNullWithItsFlag) {
  nlohmann::json ok = checked<double>::pass(3.5);
  EXPECT_EQ(ok["value"], 3.5);
  ASSERT_TRUE(ok.contains("flags"));
  EXPECT_TRUE(ok["flags"].is_array());
  EXPECT_TRUE(ok["flags"].empty());
  nlohmann::json bad =
      check_metric(39.98, [](double v) { return check_sectors_per_request("global load", v); });
  EXPECT_TRUE(bad["value"].is_null());
  ASSERT_EQ(bad["flags"].size(), 1u);
  EXPECT_EQ(bad["flags"][0]["code"], "sectors_per_request_out_of_range");
}

}  // namespace
}  // namespace kj::profile

namespace kj::profile {
namespace {

TEST(Format, RatesCountsBytesAndPercentagesForPeople) {
  EXPECT_EQ(format_bytes_per_s(3.35e12), "3.35 TB/s");
  EXPECT_EQ(format_bytes_per_s(13.6e9), "13.6 GB/s");
  EXPECT_EQ(format_flop_per_s(989.4e12), "989.4 TFLOP/s");
  EXPECT_EQ(format_flop(16.97e6), "17.0 MFLOP");  // three or four significant digits
  EXPECT_EQ(format_flop(9.2e6), "9.20 MFLOP");
  EXPECT_EQ(format_bytes(328'960), "328.96 kB");
  EXPECT_EQ(format_bytes(3'170'000), "3.17 MB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_pct(12.44), "12.4%");
}

}  // namespace
}  // namespace kj::profile
