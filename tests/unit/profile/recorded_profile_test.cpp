// The whole profile path on data recorded on the H200 by kjudge itself (2026-11-30): ncu's report
// of `kjudge profile` on the QuantVLA problem (tests/data/ncu/quantvla_kjudge_profile_raw.csv) and
// the CUPTI records of the same command's evaluation (tests/data/cupti/). Both tools' kernels must
// pair up, every invariant must hold on the real numbers, and the known gap between CUPTI's and
// ncu's durations must be reported, not hidden.

#include <gtest/gtest.h>

#include <algorithm>
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

using test::find_code;
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

/** The report of the recorded run from `ncu` (its counters only), with the evaluation's device
 *  medians of the same command and what ncu did not report. */
profile_report counter_report(const ncu_report& ncu) {
  side_inputs ref, cand;
  ref.ncu_kernels = kernels_in_range(ncu, ncu_reference_range);
  cand.ncu_kernels = kernels_in_range(ncu, ncu_candidate_range);
  ref.device_time_ns = 45'630;
  cand.device_time_ns = 8'700;
  const counter_source source{true, "ncu 2025.3.1.0",    "none", "all", "",
                              14.0, ncu.missing_metrics, {}};
  return build_report("quantvla.py", "fused.cu", "NVIDIA H200", recorded_roofs(), "recorded",
                      source, ref, cand);
}

/** The recorded capture with the header cell of `metric` renamed: ncu's table as if it had not
 *  reported that metric (the rows keep their fields, in a column nothing reads). */
std::string without_column(const std::string& metric) {
  std::string csv = read("ncu/quantvla_kjudge_profile_raw.csv");
  const std::string quoted = "\"" + metric + "\"";
  const auto at = csv.find(quoted);  // the header is the first line that names metrics
  EXPECT_NE(at, std::string::npos) << metric << " is not a column of the capture";
  if (at != std::string::npos) csv.replace(at, quoted.size(), "\"column_removed_by_the_test\"");
  return csv;
}

/** The recorded capture with the value of `metric` in the row of the kernel whose name contains
 *  `kernel` replaced by "n/a": ncu's table as if it had printed no value there. Fields are quoted
 *  ("" inside); the header is the first line that names metrics. */
std::string with_empty_value(const std::string& metric, const std::string& kernel) {
  const auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    std::string f;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
        f += "\"\"";
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.push_back(f);
        f.clear();
      } else {
        f += c;
      }
    }
    fields.push_back(f);
    return fields;
  };
  std::istringstream in(read("ncu/quantvla_kjudge_profile_raw.csv"));
  std::string out, line;
  std::size_t column = 0;
  bool replaced = false;
  while (std::getline(in, line)) {
    const auto fields = split(line);
    if (column == 0) {
      const auto it = std::find(fields.begin(), fields.end(), metric);
      if (it != fields.end()) column = static_cast<std::size_t>(it - fields.begin());
    } else if (!replaced && line.find(kernel) != std::string::npos && fields.size() > column) {
      std::string rebuilt;
      for (std::size_t i = 0; i < fields.size(); ++i)
        rebuilt += (i ? ",\"" : "\"") + (i == column ? std::string("n/a") : fields[i]) + "\"";
      line = rebuilt;
      replaced = true;
    }
    out += line + "\n";
  }
  EXPECT_TRUE(replaced) << metric << " in " << kernel;
  return out;
}

/** Every figure of `now` (a {value, flags} object, at any depth) has the number it has in `full`,
 *  or none; one that lost its number says in its `no_data` reason which of `unreported` it
 *  needed. A class is the same or unknown. Returns how many figures lost their number. */
std::size_t expect_same_or_withheld(const nlohmann::json& full, const nlohmann::json& now,
                                    const std::vector<std::string>& unreported,
                                    const std::string& path) {
  if (now.is_object() && now.contains("value")) {
    if (!now.at("value").is_null()) {
      EXPECT_EQ(now.at("value"), full.at("value")) << path;
      return 0;
    }
    if (full.at("value").is_null()) return 0;
    const auto& reason = now.at("flags").at(0);
    const std::string message = reason.at("message").get<std::string>();
    EXPECT_EQ(reason.at("code"), no_data_code) << path << ": " << message;
    EXPECT_TRUE(
        std::any_of(unreported.begin(), unreported.end(),
                    [&](const std::string& m) { return message.find(m) != std::string::npos; }))
        << path << ": " << message;
    return 1;
  }
  if (now.is_object() && now.contains("class")) {
    EXPECT_TRUE(now.at("class") == full.at("class") || now.at("class") == "unknown")
        << path << ": " << now.at("class") << " (" << now.at("reason") << ") instead of "
        << full.at("class");
    return 0;
  }
  std::size_t withheld = 0;
  if (now.is_object())
    for (const auto& [key, value] : now.items())
      withheld += expect_same_or_withheld(full.at(key), value, unreported, path + "." + key);
  return withheld;
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
                   {true, "ncu 2025.3.1.0", "none", "all", "", 14.0, {}, {}}, ref, cand);
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

TEST(RecordedProfile, CaptureThatMissesNoMetricReportsNoneMissing) {
  const auto r = counter_report(data().ncu);
  EXPECT_TRUE(r.counters.missing_metrics.empty());
  EXPECT_FALSE(has_code(r.flags, "ncu_metrics_missing"));
  EXPECT_EQ(to_json(r).at("counters").at("missing_metrics"), nlohmann::json::array());
  EXPECT_EQ(render_report(r).find("did not report"), std::string::npos);
}

TEST(RecordedProfile, MetricNcuDidNotReportIsNamedAndNoFigureChangesItsNumber) {
  // Every metric kjudge reads: what a table with none of them lacks.
  const auto all = parse_ncu_raw_csv("\"ID\",\"Kernel Name\"\n\"\",\"\"\n").missing_metrics;
  ASSERT_GT(all.size(), 40u);
  const nlohmann::json full = to_json(counter_report(data().ncu));
  for (const auto& metric : all) {
    SCOPED_TRACE(metric);
    const auto ncu = parse_ncu_raw_csv(without_column(metric));
    // A metric with a stand-in column (launch__sm_count, the Grid Size / Block Size tuples) is
    // still reported.
    ASSERT_LE(ncu.missing_metrics.size(), 1u);
    const auto r = counter_report(ncu);
    EXPECT_EQ(has_code(r.flags, "ncu_metrics_missing"), !ncu.missing_metrics.empty());
    if (!ncu.missing_metrics.empty()) {
      EXPECT_EQ(ncu.missing_metrics.front(), metric);
      const auto* f = find_code(r.flags, "ncu_metrics_missing");
      ASSERT_NE(f, nullptr);
      EXPECT_NE(f->message.find(metric), std::string::npos) << f->message;
    }
    const nlohmann::json now = to_json(r);
    EXPECT_EQ(now.at("counters").at("missing_metrics").size(), ncu.missing_metrics.size());
    std::size_t withheld = 0;
    for (const char* side : {"reference", "candidate"}) {
      const auto& f = full.at("sides").at(side);
      const auto& n = now.at("sides").at(side);
      for (std::size_t i = 0; i < n.at("kernels").size(); ++i)
        withheld += expect_same_or_withheld(
            f.at("kernels")[i].at("derived"), n.at("kernels")[i].at("derived"), ncu.missing_metrics,
            std::string(side) + ".kernels[" + std::to_string(i) + "].derived");
      withheld +=
          expect_same_or_withheld(f.at("total").at("derived"), n.at("total").at("derived"),
                                  ncu.missing_metrics, std::string(side) + ".total.derived");
      withheld += expect_same_or_withheld(f.at("roofline"), n.at("roofline"), ncu.missing_metrics,
                                          std::string(side) + ".roofline");
      withheld += expect_same_or_withheld(f.at("bound"), n.at("bound"), ncu.missing_metrics,
                                          std::string(side) + ".bound");
      // A counter read as 0 breaks no invariant (0 sectors per request would).
      const auto errors = error_codes(side == std::string("reference") ? r.reference.flags
                                                                       : r.candidate_side.flags);
      EXPECT_TRUE(errors.empty()) << errors.front();
    }
    // Every counter feeds some figure, which then has no number: the comparison is not vacuous.
    // The launch shape (launch__*) is only printed, and launch__sm_count stands in for the SM
    // count.
    const bool feeds =
        !metric.starts_with("launch__") && metric != "device__attribute_multiprocessor_count";
    EXPECT_EQ(withheld > 0, feeds) << withheld << " figures withheld";
  }
}

TEST(RecordedProfile, CaptureWithoutTheDurationColumnHasNoClassAndSaysWhy) {
  const auto r = counter_report(parse_ncu_raw_csv(without_column("gpu__time_duration.sum")));
  ASSERT_EQ(r.counters.missing_metrics, std::vector<std::string>{"gpu__time_duration.sum"});
  for (const auto* s : {&r.reference, &r.candidate_side}) {
    SCOPED_TRACE(s->side);
    // 0 ns of kernels in a 45.6 / 8.7 us forward would otherwise read as launch gaps.
    EXPECT_EQ(s->bound.bound, bottleneck::unknown);
    EXPECT_NE(s->bound.reason.find("has no duration (kernel duration: ncu did not report "
                                   "gpu__time_duration.sum)"),
              std::string::npos)
        << s->bound.reason;
  }
  const std::string text = render_report(r);
  EXPECT_NE(text.find("counters ncu did not report (1): gpu__time_duration.sum"),
            std::string::npos);
  EXPECT_NE(text.find("[report] ncu_metrics_missing"), std::string::npos);
}

TEST(RecordedProfile, ValueNcuLeftEmptyInOneRowWithholdsThatKernelsFiguresOnly) {
  const auto full = counter_report(data().ncu);
  const auto ncu = parse_ncu_raw_csv(with_empty_value("dram__bytes_read.sum", "quantvla_kernel"));
  EXPECT_TRUE(ncu.missing_metrics.empty()) << "the column is there";
  const auto r = counter_report(ncu);
  ASSERT_EQ(r.candidate_side.kernels.size(), 1U);
  const auto& k = r.candidate_side.kernels[0];
  EXPECT_EQ(k.counters.unreported_metrics, std::vector<std::string>{"dram__bytes_read.sum"});
  for (const auto* d : {&k.derived, &r.candidate_side.total->derived}) {
    ASSERT_TRUE(d->dram_bytes_per_s.is_missing());
    EXPECT_NE(d->dram_bytes_per_s.failure().message.find("dram__bytes_read.sum"), std::string::npos)
        << d->dram_bytes_per_s.failure().message;
    EXPECT_TRUE(d->l2_bytes_per_s.ok()) << "figures that need no DRAM counter keep their number";
  }
  EXPECT_TRUE(has_code(r.candidate_side.flags, "ncu_values_missing"));
  EXPECT_FALSE(has_code(r.flags, "ncu_metrics_missing"));
  // The reference's kernels had their values: every figure as in the full capture.
  EXPECT_EQ(to_json(r).at("sides").at("reference"), to_json(full).at("sides").at("reference"));
  EXPECT_TRUE(error_codes(r.candidate_side.flags).empty());

  const std::string text = render_report(r);
  const auto row_start = text.find("DRAM bytes (read + write)");
  ASSERT_NE(row_start, std::string::npos);
  const std::string row = text.substr(row_start, text.find('\n', row_start) - row_start);
  EXPECT_NE(row.find("3.17 MB"), std::string::npos) << row;  // the reference's sum
  EXPECT_NE(row.find("n/a"), std::string::npos) << row;      // not the candidate's write bytes

  // A launch figure ncu left empty shows as n/a, not 0.
  const auto no_regs = counter_report(
      parse_ncu_raw_csv(with_empty_value("launch__registers_per_thread", "quantvla_kernel")));
  const std::string kernels = render_report(no_regs);
  EXPECT_NE(kernels.find("regs n/a"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("regs 0 "), std::string::npos) << kernels;
  EXPECT_NE(render_report(full).find("regs 64 "), std::string::npos) << render_report(full);
}

}  // namespace
}  // namespace kj::profile
