// `kjudge roofline` through the real executable, without a GPU: a saved result is shown with
// --from (its figures checked), and without a GPU or a file the command says why and exits 1.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/report.hpp>
#include <kjudge/runner/process.hpp>

#include "hand_made.hpp"

namespace kj::roofline {
namespace {

namespace fs = std::filesystem;

struct run_output {
  int exit_code = -1;
  std::string output;
};

run_output run_kjudge(std::vector<std::string> args) {
  runner::spawn_options o;
  o.argv = {KJ_KJUDGE_EXE};
  for (auto& a : args) o.argv.push_back(std::move(a));
  o.timeout = std::chrono::seconds(60);
  o.output_tail_bytes = 1 << 20;
  const auto p = runner::run_process(o);
  return {p.how == runner::exit_kind::exited ? p.exit_code : -1, p.output_tail};
}

fs::path saved_result(const std::string& tag, const roofline_result& r) {
  const auto path = fs::temp_directory_path() /
                    ("kj_roofline_cli_" + tag + "_" + std::to_string(::getpid()) + ".json");
  write_file_atomic(path, to_document(r, check_roofline(r)).dump(2));
  return path;
}

TEST(RooflineCli, FromShowsASavedResultWithoutAGpu) {
  const auto path = saved_result("from", test::h200_like());
  const auto r = run_kjudge({"roofline", "--from", path.string()});
  fs::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("NVIDIA H200"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4.30 TB/s"), std::string::npos) << r.output;  // DRAM copy
  EXPECT_NE(r.output.find("60.0 TFLOP/s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FLOP/byte"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch, stream (queued, device)  1.70 us"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("flagged"), std::string::npos) << r.output;
}

TEST(RooflineCli, FromChecksTheSavedFiguresAgain) {
  auto bad = test::h200_like();
  bad.shared_read = test::bw(13.6e-3, 1 << 20);
  bad.l2_read = test::bw(927.6e-3, 30ull << 20);
  const auto path = saved_result("bad", bad);
  const auto r = run_kjudge({"roofline", "--from", path.string(), "--json", "-"});
  fs::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["schema"], "kjudge.roofline/1");
  EXPECT_TRUE(j["ceilings"]["l1_tbps"]["value"].is_null());
  EXPECT_TRUE(j["ceilings"]["l2_tbps"]["value"].is_null());
  EXPECT_DOUBLE_EQ(j["ceilings"]["dram_tbps"]["value"].get<double>(), 4.30);
  EXPECT_DOUBLE_EQ(j["ceilings"]["launch_stream_queued_us"]["value"].get<double>(), 1.7);
  EXPECT_DOUBLE_EQ(j["benchmarks"]["launch_stream_queued"]["best_us"].get<double>(), 1.7);
}

TEST(RooflineCli, WithoutAGpuOrAFileSaysWhyAndExitsOne) {
  const auto r = run_kjudge({"roofline", "--cache-dir", fs::temp_directory_path().string()});
  if (r.output.find("no GPU") == std::string::npos) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--from"), std::string::npos) << r.output;
}

TEST(RooflineCli, UnreadableFileAndBadOptionsFail) {
  EXPECT_EQ(run_kjudge({"roofline", "--from", "/nonexistent/roofline.json"}).exit_code, 7);
  EXPECT_EQ(run_kjudge({"roofline", "--repetitions", "2"}).exit_code, 2);
  // An empty path is a usage error, not "no file given" (which would measure the GPU).
  for (const char* option : {"--from", "--cache-dir"}) {
    const auto empty = run_kjudge({"roofline", option, ""});
    EXPECT_EQ(empty.exit_code, 2) << option << ": " << empty.output;
    EXPECT_NE(empty.output.find("an empty path"), std::string::npos) << empty.output;
  }
  const auto help = run_kjudge({"roofline", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--refresh"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace kj::roofline
