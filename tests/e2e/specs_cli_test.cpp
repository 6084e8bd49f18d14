// End-to-end tests of `kjudge specs` through the real executable. They must pass on a machine
// without a GPU (the build machine): there the command says so and still shows the datasheet.

#include <unistd.h>

#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

std::filesystem::path temp_json(const std::string& tag) {
  return std::filesystem::temp_directory_path() /
         ("kjudge_e2e_specs_" + tag + "_" + std::to_string(::getpid()) + ".json");
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, false);
}

TEST(SpecsCli, AllWithJsonWritesTheVersionedTable) {
  const auto path = temp_json("all");
  std::filesystem::remove(path);
  const auto r = run_raw({"specs", "--all", "--json", path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(j.is_object()) << "no JSON written; output:\n" << r.output;
  EXPECT_EQ(j["schema"], "kjudge.specs/1");
  ASSERT_TRUE(j["datasheet"].is_array());
  EXPECT_GE(j["datasheet"].size(), 8u);
  bool saw_h100 = false;
  for (const auto& e : j["datasheet"]) {
    EXPECT_EQ(e["source"], "datasheet");
    EXPECT_EQ(e["sparsity"], "dense");
    if (e["key"] == "h100_sxm") {
      saw_h100 = true;
      EXPECT_LT(e["peaks"]["bf16_tensor_tflops"].get<double>(), 1000.0);
    }
  }
  EXPECT_TRUE(saw_h100);
  // The text goes to stdout as well: the table, its units and its sources.
  EXPECT_NE(r.output.find("h200_sxm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dense"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NVIDIA H200 Tensor Core GPU datasheet"), std::string::npos);
  if (!j["gpu_available"].get<bool>()) {
    EXPECT_TRUE(j["devices"].empty());
    EXPECT_FALSE(j["gpu_unavailable_reason"].get<std::string>().empty());
    EXPECT_NE(r.output.find("no GPU"), std::string::npos) << r.output;
  } else {
    ASSERT_FALSE(j["devices"].empty());
    EXPECT_GT(j["devices"][0]["sm_count"].get<int>(), 0);
    EXPECT_EQ(j["devices"][0]["derived"]["source"], "derived");
  }
}

TEST(SpecsCli, WithoutAGpuStillShowsTheTableAndExitsZero) {
  const auto r = run_raw({"specs"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (r.output.find("no GPU") == std::string::npos) GTEST_SKIP() << "a GPU is present";
  EXPECT_NE(r.output.find("b200"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rtx_4090"), std::string::npos) << r.output;
}

TEST(SpecsCli, AJsonThatCannotBeWrittenKeepsTheTextAndExitsEight) {
  // The document was written before the text: a failed write exited 7 with nothing shown.
  const auto r = run_raw({"specs", "--all", "--json", "/dev/full"});
  EXPECT_EQ(r.exit_code, 8) << r.output;
  EXPECT_NE(r.output.find("NOT written to --json /dev/full"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("H200"), std::string::npos) << r.output;  // the table was printed
}

TEST(SpecsCli, JsonToStdoutIsOnlyJson) {
  const auto r = run_raw({"specs", "--all", "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // stderr may carry the no-GPU line; the JSON object is the rest.
  const auto start = r.output.find('{');
  ASSERT_NE(start, std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(start), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["schema"], "kjudge.specs/1");
}

TEST(SpecsCli, HelpComesFromTheDocsAndBadOptionsAreUsageErrors) {
  const auto help = run_raw({"specs", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("kjudge specs [--all] [--json <path>]"), std::string::npos)
      << help.output;
  EXPECT_EQ(run_raw({"specs", "--no-such-option"}).exit_code, 2);
  // --json is checked as eval's is: an empty path, a directory or a folder that does not exist
  // is refused before anything is written (a missing folder was created); so is a folder no
  // file can be made in, which root's access() lets through (/proc: the result was lost at the
  // end).
  const auto missing = std::filesystem::temp_directory_path() /
                       ("kjudge_no_such_dir_" + std::to_string(::getpid())) / "x.json";
  for (const std::string& bad : {std::string(), std::filesystem::temp_directory_path().string(),
                                 missing.string(), std::string("/proc/kjudge_x.json")}) {
    for (const char* command : {"specs", "roofline", "cache"}) {
      const auto r = run_raw({command, "--json", bad});
      EXPECT_EQ(r.exit_code, 2) << command << " --json '" << bad << "': " << r.output;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(missing.parent_path()));
  // A saved roofline is shown as it is: the options that measure one are refused with it (they
  // were ignored).
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--refresh"}, {"--device", "0"}, {"--repetitions", "7"}}) {
    std::vector<std::string> args = {"roofline", "--from", "saved.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_raw(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << ": " << r.output;
    EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
  }
  // No command at all: the help, on stderr, as a usage error.
  const auto bare = run_raw({});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.output.find("kjudge <command>"), std::string::npos) << bare.output;
  // run_raw reads stdout and stderr together: with stderr dropped, nothing is left.
  runner::spawn_options o;
  o.argv = {"/bin/sh", "-c", "exec \"$0\" 2>/dev/null", KJ_KJUDGE_EXE};
  o.timeout = std::chrono::seconds(60);
  const auto out_only = runner::run_process(o);
  EXPECT_EQ(out_only.how, runner::exit_kind::exited);
  EXPECT_EQ(out_only.exit_code, 2);
  EXPECT_EQ(out_only.output_tail, "") << out_only.output_tail;
}

}  // namespace
}  // namespace kj::test
