// The whole profile path on data recorded on the H200 by kjudge itself (2026-11-30): ncu's report
// of `kjudge profile` on the QuantVLA problem (tests/data/ncu/quantvla_kjudge_profile_raw.csv) and
// the CUPTI records of the same command's evaluation (tests/data/cupti/). Both tools' kernels must
// pair up, every invariant must hold on the real numbers, and the known gap between CUPTI's and
// ncu's durations must be reported, not hidden.

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include <kjudge/profile/checked.hpp>
#include <kjudge/profile/forward_json.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/profile/report.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

using test::has_code;

std::string read(const std::string& relative) {
  std::ifstream in(std::string(KJ_TEST_DATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in) << relative << " missing";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/** The roofs the recorded run used: kjudge roofline on that H200 and the H200 SXM datasheet. */
ceilings recorded_roofs() {
  ceilings c;
  c.dram = {4.64e12, 4.8e12, 960ull << 20};
  c.l2 = {8.70e12, 0, 30ull << 20};
  c.l1 = {33.0e12, 0, 12ull << 20};
  c.at(flop_type::fp32) = {63.67e12, 66.9e12};
  c.at(flop_type::fp64) = {33.18e12, 33.5e12};
  c.at(flop_type::tensor_bf16) = {789.2e12, 989.4e12};
  c.at(flop_type::tensor_fp16) = {755.9e12, 989.4e12};
  return c;
}

struct recorded {
  ncu_report ncu;
  cupti_forward reference, candidate;
};

const recorded& data() {
  static const recorded r = [] {
    recorded out;
    out.ncu = parse_ncu_raw_csv(read("ncu/quantvla_kjudge_profile_raw.csv"));
    const auto j = nlohmann::json::parse(read("cupti/quantvla_fused_launches.json"));
    out.reference = cupti_forward_from_json(j.at("reference"));
    out.candidate = cupti_forward_from_json(j.at("candidate"));
    return out;
  }();
  return r;
}

std::vector<std::string> error_codes(const std::vector<flag>& flags) {
  std::vector<std::string> out;
  for (const auto& f : flags)
    if (f.severity == severity_error) out.push_back(f.code + ": " + f.message);
  return out;
}

TEST(RecordedProfile, KjudgesNvtxRangesSplitTheKernelsBySide) {
  const auto& d = data();
  EXPECT_EQ(d.ncu.kernels.size(), 15u);
  EXPECT_TRUE(d.ncu.missing_metrics.empty());
  const auto ref = kernels_in_range(d.ncu, ncu_reference_range);
  const auto cand = kernels_in_range(d.ncu, ncu_candidate_range);
  EXPECT_EQ(ref.size(), 14u);
  ASSERT_EQ(cand.size(), 1u);
  EXPECT_NE(cand[0].name.find("quantvla_kernel"), std::string::npos) << cand[0].name;
  EXPECT_EQ(cand[0].grid.x, 128u);
  EXPECT_EQ(cand[0].block.x, 256u);
  // The units row is empty through --log-file; values are still base units (ns, bytes).
  EXPECT_GT(cand[0].duration_ns, 5'000);
  EXPECT_LT(cand[0].duration_ns, 10'000);
  EXPECT_GT(cand[0].dram_read_bytes, 200'000);  // x (256 KiB) and W (64 KiB), cold
}

TEST(RecordedProfile, CuptiRecordsSummariseToWhatTheyHold) {
  const auto& d = data();
  ASSERT_EQ(d.reference.kernels.size(), 14u);
  ASSERT_EQ(d.candidate.kernels.size(), 1u);
  ASSERT_TRUE(d.reference.launches.ok());
  const auto& l = d.reference.launches.value();
  EXPECT_EQ(l.kernel_launches, 14u);
  const double sum =
      std::accumulate(d.reference.kernels.begin(), d.reference.kernels.end(), 0.0,
                      [](double s, const timed_kernel& k) { return s + k.duration_ns; });
  EXPECT_DOUBLE_EQ(l.kernel_time_sum.count(), sum);
  EXPECT_LE(l.kernel_busy_time.count(), l.kernel_span.count());
  for (const auto& k : d.reference.kernels) EXPECT_GE(k.duration_ns, 500.0) << k.name;
}

TEST(RecordedProfile, ReportOnRealDataPairsBothToolsAndBreaksNoInvariant) {
  const auto& d = data();
  side_inputs ref, cand;
  ref.ncu_kernels = kernels_in_range(d.ncu, ncu_reference_range);
  cand.ncu_kernels = kernels_in_range(d.ncu, ncu_candidate_range);
  ref.cupti = d.reference;
  cand.cupti = d.candidate;
  ref.device_time_ns = 45'630;  // the evaluation's device medians in the same command
  cand.device_time_ns = 8'700;
  const auto r =
      build_report("quantvla.py", "fused.cu", "NVIDIA H200", recorded_roofs(), "recorded",
                   {true, "ncu 2025.3.1.0", "none", "all", "", 14.0}, ref, cand);
  EXPECT_TRUE(error_codes(r.flags).empty());
  for (const auto* s : {&r.reference, &r.candidate_side}) {
    SCOPED_TRACE(s->side);
    const auto errors = error_codes(s->flags);
    EXPECT_TRUE(errors.empty()) << errors.front();
    EXPECT_FALSE(has_code(s->flags, "duration_unmatched"));
    EXPECT_EQ(s->bound.bound, bottleneck::latency_bound) << s->bound.reason;
  }
  EXPECT_EQ(r.reference.durations.size(), 14u);
  EXPECT_EQ(r.candidate_side.durations.size(), 1u);
  ASSERT_TRUE(r.fusion_ratio.ok());
  EXPECT_DOUBLE_EQ(r.fusion_ratio.value(), 14.0);
  // The gap measured on the H200: ncu's one-block reduce_kernel takes ~2x CUPTI's time, and the
  // report says so.
  bool reduce_gap = false;
  for (const auto& m : r.reference.durations)
    if (m.name.find("reduce_kernel") != std::string::npos && m.difference_pct > 40)
      reduce_gap = true;
  EXPECT_TRUE(reduce_gap);
  EXPECT_TRUE(has_code(r.reference.flags, "duration_disagrees"));
  // The agent summary quotes the candidate's largest stall as a share of stall cycles.
  const auto text = agent_summary(r);
  EXPECT_NE(text.find("share of stall cycles"), std::string::npos) << text;
}

}  // namespace
}  // namespace kj::profile
