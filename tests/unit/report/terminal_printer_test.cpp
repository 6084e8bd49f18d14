// The `launches` section of `kjudge eval`'s terminal report, from the CUPTI records of one real
// evaluation (tests/data/cupti/quantvla_fused_launches.json, README there).
#include <kjudge/report/terminal_printer.hpp>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kj::report {
namespace {

nlohmann::json recorded_launches() {
  std::ifstream in(std::string(KJ_TEST_DATA_DIR) + "/cupti/quantvla_fused_launches.json");
  EXPECT_TRUE(in) << "fixture missing";
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

TEST(TerminalPrinter, LaunchesSectionQuotesTheRecordedForwards) {
  eval_result r;
  r.status = eval_status::correct;
  r.launches = recorded_launches();
  const std::string text = render_terminal(r);
  EXPECT_NE(text.find("launches  one cold-L2 forward per side, CUPTI device records"),
            std::string::npos)
      << text;
  // Peak memory in the same SI units as `kjudge profile` (1051648 bytes over the baseline).
  EXPECT_NE(text.find("peak memory +1.05 MB"), std::string::npos) << text;
  EXPECT_NE(text.find("peak memory +0 B"), std::string::npos) << text;
  // The candidate's one kernel, and the reference's longest first.
  EXPECT_NE(text.find("1 kernel "), std::string::npos) << text;
  EXPECT_NE(text.find("quantvla_kernel"), std::string::npos) << text;
  const auto reduce = text.find("8.26 us  reduce_kernel"), gemm = text.find("5.76 us  sm80_xmma");
  ASSERT_NE(reduce, std::string::npos) << text;
  ASSERT_NE(gemm, std::string::npos) << text;
  EXPECT_LT(reduce, gemm);
  EXPECT_NE(text.find("(11 more)"), std::string::npos) << text;
  EXPECT_NE(text.find("fusion ratio"), std::string::npos) << text;
}

measure::figure device_figure(double median_us, std::vector<double> set_medians_us) {
  measure::figure f;
  f.kind = measure::figure_kind::device;
  f.method = "cuda-graph+blocking-kernel+events";
  f.valid = true;
  f.summary.n = 100;
  f.summary.median = median_us;
  f.set_medians_us = std::move(set_medians_us);
  return f;
}

TEST(TerminalPrinter, TimingShowsTheSetRangesAndHowEachIntervalWasResampled) {
  eval_result r;
  r.status = eval_status::correct;
  measure::comparison c;
  const double none = std::numeric_limits<double>::quiet_NaN();  // a set without samples
  c.reference.device = device_figure(38.5, {38.0, 38.9, none});
  c.candidate.device = device_figure(6.4, {6.30, 6.46, none});
  c.reference.stream.kind = c.candidate.stream.kind = measure::figure_kind::stream;
  c.speedups.push_back({measure::figure_kind::device, true, {6.02, 5.95, 6.08, 0.95, 2000, true}});
  c.speedups.push_back({measure::figure_kind::stream, true, {20.0, 19.0, 21.0, 0.95, 2000, false}});
  r.timing = c;
  std::string text = render_terminal(r);
  EXPECT_NE(
      text.find("95% bootstrap CI over this run's input sets):  device 6.02x [5.95, 6.08]  stream "
                "20.00x [19.00, 21.00] (over samples)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("device median by input set: reference 38.00 us - 38.90 us (2.3%), "
                      "candidate 6.30 us - 6.46 us (2.5%)"),
            std::string::npos)
      << text;
  // One set with samples, or a zero median: no range for that side.
  r.timing->candidate.device.set_medians_us = {6.3, none};
  r.timing->reference.device.summary.median = 0;
  text = render_terminal(r);
  EXPECT_EQ(text.find("device median by input set"), std::string::npos) << text;
  // A slowdown of hundreds of times keeps three significant digits (it read 0.00x [0.00, 0.00]).
  r.timing->speedups = {
      {measure::figure_kind::host_wall, true, {0.00266, 0.00265, 0.00268, 0.95, 2000, true}}};
  text = render_terminal(r);
  EXPECT_NE(text.find("host_wall 0.00266x [0.00265, 0.00268]"), std::string::npos) << text;
  // Resampled, but too many resamples had a candidate median of 0: the upper end is unbounded
  // (NaN once read back from JSON's null), not "one sample on a side".
  r.timing->speedups = {{measure::figure_kind::stream, true, {1.0, 0.5, none, 0.95, 2000, true}}};
  text = render_terminal(r);
  EXPECT_NE(text.find("stream 1.00x [0.50, unbounded]"), std::string::npos) << text;
  r.timing->speedups = {{measure::figure_kind::stream, true, {1.0, none, none, 0.95, 0, false}}};
  text = render_terminal(r);
  EXPECT_NE(text.find("stream 1.00x (no interval: one sample on a side)"), std::string::npos)
      << text;
  // A speedup withheld (a figure failed an invariant) says so, not nothing.
  r.timing->speedups = {{measure::figure_kind::device, false, {none, none, none, 0.95, 0, false}},
                        {measure::figure_kind::stream, true, {2.0, 1.9, 2.1, 0.95, 2000, true}}};
  text = render_terminal(r);
  EXPECT_NE(text.find("device withheld  stream 2.00x [1.90, 2.10]"), std::string::npos) << text;
}

TEST(TerminalPrinter, AHostTimingWithheldOnACpuRunStillHasItsRows) {
  // Without a GPU the device and stream rows are left out; the host wall's were too when both
  // sides' were withheld, and the table was its header alone.
  eval_result r;
  r.status = eval_status::correct;
  measure::comparison c;
  c.reference.host_wall.kind = c.candidate.host_wall.kind = measure::figure_kind::host_wall;
  c.reference.host_wall.note = "withheld: python_threads_busy";
  c.candidate.host_wall.note = "withheld: waited_for_background_cpu";
  r.timing = c;
  const std::string text = render_terminal(r);
  EXPECT_NE(text.find("host wall  reference  withheld: python_threads_busy"), std::string::npos)
      << text;
  EXPECT_NE(text.find("candidate  withheld: waited_for_background_cpu"), std::string::npos) << text;
  EXPECT_EQ(text.find("device     reference"), std::string::npos) << text;
}

TEST(TerminalPrinter, MismatchLinesShowExactIntegersAndInfiniteErrors) {
  eval_result r;
  r.status = eval_status::incorrect;
  r.correctness.trials = 1;
  trial_result t;
  t.kind = "nominal";
  output_check big;
  big.expected_dtype = big.actual_dtype = "int64";
  big.message = "1 of 1 elements differ";
  // 2^60 + 5 and + 6: doubles round them together; their texts are exact.
  big.mismatches.push_back({{0},
                            1152921504606846976.0,
                            1152921504606846976.0,
                            1.0,
                            "1152921504606846981",
                            "1152921504606846982"});
  output_check inf;
  inf.index = 1;
  inf.expected_dtype = inf.actual_dtype = "float32";
  inf.message = "1 Inf in output";
  const double nan = std::numeric_limits<double>::quiet_NaN();  // JSON's null read back
  inf.mismatches.push_back({{3}, 2.0, nan, nan, "2", "inf"});
  inf.mismatches.push_back({{4}, 2.0, nan, nan, "2", "nan"});
  t.outputs = {big, inf};
  r.trials.push_back(t);
  const std::string text = render_terminal(r);
  EXPECT_NE(text.find("at [0] expected 1152921504606846981 got 1152921504606846982 (abs err 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("at [3] expected 2 got inf (abs err inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("at [4] expected 2 got nan (abs err nan)"), std::string::npos) << text;
}

TEST(TerminalPrinter, ATrialThatComparedNothingShowsNoErrors) {
  eval_result r;
  r.status = eval_status::runtime_error;
  r.message = "ModelNew.forward raised: RuntimeError: boom";
  r.correctness.trials = 1;
  trial_result t;
  t.kind = "nominal";
  t.seed = 7;
  t.error = r.message;
  r.trials.push_back(t);
  const std::string text = render_terminal(r);
  EXPECT_NE(text.find("n/a       n/a       n/a  FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("precision over nominal trials: n/a (no output was compared)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("0.00e+00"), std::string::npos) << text;
}

}  // namespace
}  // namespace kj::report
