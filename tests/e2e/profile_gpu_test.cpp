// End-to-end tests of `kjudge profile` and of the CUPTI records every GPU evaluation carries, on
// a GPU: counters for both sides of the QuantVLA problem, CUPTI durations against ncu's, and a
// sweep of every bundled problem checking that no reported value breaks an invariant. Skipped (not
// passed) without a GPU; the counter tests skip when ncu is missing or counters are not permitted.

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <set>

#include <kjudge/cuda/probe.hpp>

#include "busy_gpu.hpp"
#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

namespace fs = std::filesystem;

class ProfileGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto p = cuda::probe();
    if (!p.available) GTEST_SKIP() << "no GPU: " << p.reason;
  }
};

const char* quantvla = "problems/level2/quantvla_selective_layout_fusion.py";

/** Every flag of severity "error" anywhere in `j`, as "code: message" (with the JSON path). */
void collect_errors(const nlohmann::json& j, const std::string& path,
                    std::vector<std::string>& out) {
  if (j.is_object()) {
    if (j.contains("severity") && j.contains("code") && j["severity"] == "error")
      out.push_back(path + ": " + j["code"].get<std::string>() + ": " +
                    j.value("message", std::string()));
    for (const auto& [k, v] : j.items()) collect_errors(v, path + "/" + k, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      collect_errors(j[i], path + "/" + std::to_string(i), out);
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

TEST_F(ProfileGpu, EveryEvaluationRecordsLaunchesWithCupti) {
  const auto r = run_eval(quantvla, "examples/quantvla/fused.cu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& l = r.result["launches"];
  ASSERT_TRUE(l.is_object()) << r.result.dump(1).substr(0, 3000);
  const auto& ref = l["reference"]["launches"]["value"];
  const auto& cand = l["candidate"]["launches"]["value"];
  ASSERT_TRUE(ref.is_object()) << l.dump(1);
  ASSERT_TRUE(cand.is_object()) << l.dump(1);
  // Eager PyTorch: abs, max, div, round, clamp, mul, sigmoid, ... and the GEMM: many kernels; the
  // fused candidate is one kernel.
  EXPECT_GE(ref["kernel_launches"].get<int>(), 5);
  EXPECT_EQ(cand["kernel_launches"].get<int>(), 1);
  EXPECT_NEAR(l["fusion_ratio"]["value"].get<double>(), ref["kernel_launches"].get<double>(), 1e-9);
  for (const char* side : {"reference", "candidate"}) {
    const auto& s = l[side];
    double sum = 0;
    for (const auto& k : s["kernels"]) {
      EXPECT_GE(k["duration_ns"].get<double>(), 500.0) << k.dump();
      sum += k["duration_ns"].get<double>();
    }
    // Invariant 2: the events around the forward cover its kernels.
    EXPECT_GE(s["event_time_ns"].get<double>(), 0.9 * sum) << side;
    EXPECT_TRUE(s["peak_memory"]["value"].is_object()) << s["peak_memory"].dump();
  }
  std::vector<std::string> errors;
  collect_errors(r.result, "", errors);
  EXPECT_TRUE(errors.empty()) << joined(errors);
}

TEST_F(ProfileGpu, QuantvlaCountersForBothSidesAgreeWithCupti) {
  const auto r =
      run_command("profile", quantvla, "examples/quantvla/fused.cu", {}, std::chrono::seconds(300));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& p = r.result["profile"];
  ASSERT_TRUE(p.is_object()) << r.output;
  EXPECT_EQ(p["schema"], "kjudge.profile/2");
  const auto& c = p["counters"];
  if (!c["collected"].get<bool>()) {
    const auto why = c["unavailable_reason"].get<std::string>();
    if (why.find("not found") != std::string::npos ||
        why.find("ERR_NVGPUCTRPERM") != std::string::npos)
      GTEST_SKIP() << "no counters here: " << why;
    FAIL() << "counters not collected: " << why << "\n" << r.output;
  }
  EXPECT_EQ(c["clock_control"], "none");
  const auto& ref = p["sides"]["reference"];
  const auto& cand = p["sides"]["candidate"];
  EXPECT_GE(ref["kernels"].size(), 5u);
  ASSERT_EQ(cand["kernels"].size(), 1u);
  EXPECT_NE(cand["kernels"][0]["counters"]["name"].get<std::string>().find("quantvla"),
            std::string::npos);
  // ncu and CUPTI saw the same launches (paired by kernel and launch shape). Where their durations
  // of a kernel >= 5 us differ by more than 10%, the report says so with a warning: on the H200
  // ncu's gpu__time_duration holds about 1.3 us more fixed per-kernel time than CUPTI's
  // (bench/ncu_vs_cupti), and runs 7 us above for PyTorch's one-block reduce_kernel
  // (docs/benchmarks.md); the 10% target is open.
  for (const auto* side : {&ref, &cand}) {
    ASSERT_EQ((*side)["durations"].size(), (*side)["kernels"].size())
        << side->dump(1).substr(0, 4000);
    bool disagreement = false;
    for (const auto& d : (*side)["durations"]) {
      RecordProperty((*side)["side"].get<std::string>() + " " + d["name"].get<std::string>(),
                     fmt::format("cupti {} ns ncu {} ns", d["cupti_ns"].get<double>(),
                                 d["ncu_ns"].get<double>()));
      if (d["ncu_ns"].get<double>() >= 5000 && d["difference_pct"].get<double>() > 10.0)
        disagreement = true;
    }
    bool flagged = false;
    for (const auto& f : (*side)["flags"]) flagged = flagged || f["code"] == "duration_disagrees";
    EXPECT_EQ(disagreement, flagged) << (*side)["flags"].dump(1);
  }
  EXPECT_NE(ref["bound"]["class"], "unknown") << ref["bound"].dump();
  EXPECT_NE(cand["bound"]["class"], "unknown") << cand["bound"].dump();
  std::vector<std::string> errors;
  collect_errors(r.result, "", errors);
  EXPECT_TRUE(errors.empty()) << joined(errors);
  EXPECT_NE(r.output.find("candidate"), std::string::npos);
}

/** The flags with `code` anywhere in `j` (the profile's own and its sides'). */
void find_flags(const nlohmann::json& j, const std::string& code, std::vector<std::string>& out) {
  if (j.is_object()) {
    if (j.contains("severity") && j.value("code", std::string()) == code)
      out.push_back(j.value("message", std::string()));
    for (const auto& [k, v] : j.items()) find_flags(v, code, out);
  } else if (j.is_array()) {
    for (const auto& e : j) find_flags(e, code, out);
  }
}

TEST_F(ProfileGpu, AnotherProgramDuringTheNsightComputeRunIsSaid) {
  // The Nsight Compute run's worker looks for other programs as an evaluation's does, and the
  // profile carries what it found, marked as that run's.
  const busy_gpu other("1000");
  ASSERT_TRUE(other.ready());
  const auto r = run_command("profile", "problems/level1/softmax.py", "examples/softmax/naive.py",
                             {}, std::chrono::seconds(300));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& c = r.result["profile"]["counters"];
  if (!c["collected"].get<bool>()) {
    const auto why = c["unavailable_reason"].get<std::string>();
    if (why.find("not found") != std::string::npos ||
        why.find("ERR_NVGPUCTRPERM") != std::string::npos)
      GTEST_SKIP() << "no counters here: " << why;
    FAIL() << "counters not collected: " << why << "\n" << r.output;
  }
  std::vector<std::string> said;
  find_flags(r.result["profile"], "gpu_other_process", said);
  const std::string pid = "pid " + std::to_string(other.pid()) + " (kj_busy_gpu";
  const bool from_ncu_run = std::any_of(said.begin(), said.end(), [&](const std::string& m) {
    return m.rfind("Nsight Compute run: ", 0) == 0 && m.find(pid) != std::string::npos;
  });
  EXPECT_TRUE(from_ncu_run) << r.result["profile"]["flags"].dump(1);
  // The evaluation's own timing saw it too.
  EXPECT_NE(flag_message(r.result, "gpu_other_process").find(pid), std::string::npos)
      << r.result["flags"];
}

/** Every bundled problem (levels 1-3), profiled against itself (ModelNew = Model), must report no
 *  value that breaks an invariant. Quick settings: one trial, a short timing budget. */
TEST_F(ProfileGpu, NoBundledProblemReportsAValueThatBreaksAnInvariant) {
  std::vector<fs::path> problems;
  for (const char* level : {"level1", "level2", "level3"})
    for (const auto& e : fs::directory_iterator(source_dir() / "problems" / level))
      if (e.path().extension() == ".py") problems.push_back(e.path());
  std::sort(problems.begin(), problems.end());
  ASSERT_GE(problems.size(), 8u);
  const fs::path dir = fs::temp_directory_path() / ("kjudge_sweep_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  bool counters_seen = false;
  for (const auto& problem : problems) {
    // The reference as its own candidate: the file re-runs the problem's source and names Model.
    const fs::path cand = dir / ("self_" + problem.filename().string());
    {
      std::ifstream in(problem);
      std::ofstream out(cand);
      out << in.rdbuf() << "\n\nModelNew = Model\n";
    }
    const auto r = run_command("profile", problem.string(), cand.string(),
                               {"--trials", "1", "--budget", "0.3"}, std::chrono::seconds(300));
    SCOPED_TRACE(problem.filename().string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (!r.result.is_object()) continue;
    const auto& p = r.result["profile"];
    ASSERT_TRUE(p.is_object()) << r.output;
    counters_seen = counters_seen || p["counters"]["collected"].get<bool>();
    std::vector<std::string> errors;
    collect_errors(r.result, "", errors);
    EXPECT_TRUE(errors.empty()) << joined(errors);
  }
  fs::remove_all(dir);
  if (!counters_seen) GTEST_SKIP() << "ncu gave no counters here: only CUPTI values were checked";
}

}  // namespace
}  // namespace kj::test
