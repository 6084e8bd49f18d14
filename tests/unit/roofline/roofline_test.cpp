// Roofline results without a GPU: JSON round trip, cache naming and loading, ridge points, and the
// invariants that turn a bad figure into a flag (with hand-made results, including the seed's
// L1 13.6 GB/s below L2 927.6 GB/s), and the clocks line and JSON made from what the timing
// engine's clock monitor observed.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>

#include <kjudge/core/error.hpp>
#include <kjudge/device/datasheet.hpp>
#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/measure.hpp>
#include <kjudge/roofline/report.hpp>

#include "commands.hpp"
#include "hand_made.hpp"
#include "help.hpp"

namespace kj::roofline {
namespace {

namespace fs = std::filesystem;
using namespace kj::roofline::test;  // NOLINT: test helpers

bool has_code(const std::vector<flag>& flags, const std::string& code) {
  for (const auto& f : flags)
    if (f.code == code) return true;
  return false;
}

fs::path temp_path(const std::string& tag) {
  return fs::temp_directory_path() / ("kj_roofline_test_" + tag + "_" + std::to_string(::getpid()));
}

TEST(RooflineResult, JsonRoundTripKeepsEveryFigureAndUnitNames) {
  auto r = h200_like();
  r.bf16_tensor = {};
  r.bf16_tensor.unavailable_reason = "cuBLAS not found";
  r.flags.push_back({"benchmark_unavailable", "warning", "BF16 tensor was not measured"});
  const nlohmann::json j = r;
  EXPECT_EQ(j["schema"], "kjudge.roofline/1");
  EXPECT_DOUBLE_EQ(j["benchmarks"]["dram_copy"]["best_tbps"].get<double>(), 4.30);
  EXPECT_EQ(j["benchmarks"]["dram_copy"]["working_set_bytes"].get<std::uint64_t>(), 960ull << 20);
  EXPECT_EQ(j["benchmarks"]["fp32_fma"]["repetitions_tflops"].size(), 5u);
  EXPECT_TRUE(j["benchmarks"]["launch_stream"].contains("median_us"));
  ASSERT_TRUE(j["benchmarks"].contains("launch_stream_queued")) << j["benchmarks"].dump();
  EXPECT_DOUBLE_EQ(j["benchmarks"]["launch_stream_queued"]["best_us"].get<double>(), 1.7);
  EXPECT_EQ(j["benchmarks"]["launch_stream_queued"]["launches_per_repetition"], 4096);
  EXPECT_EQ(j["benchmarks"]["launch_stream_queued"]["kind"], "latency");
  EXPECT_EQ(j["gpu"]["uuid"], r.gpu.uuid);
  EXPECT_EQ(j["clocks"]["sm_min_mhz"].get<double>(), 1755.0);

  roofline_result back;
  from_json(nlohmann::json::parse(j.dump()), back);
  EXPECT_EQ(back.gpu.name, r.gpu.name);
  EXPECT_EQ(back.gpu.driver_version, 13000);
  EXPECT_EQ(back.dram_copy.repetitions_tbps, r.dram_copy.repetitions_tbps);
  EXPECT_DOUBLE_EQ(back.l2_read.best_tbps, 10.5);
  EXPECT_DOUBLE_EQ(back.launch_graph.best_us, r.launch_graph.best_us);
  EXPECT_EQ(back.launch_stream.repetitions_us, r.launch_stream.repetitions_us);
  EXPECT_EQ(back.launch_stream_queued.repetitions_us, r.launch_stream_queued.repetitions_us);
  EXPECT_DOUBLE_EQ(back.launch_stream_queued.median_us, r.launch_stream_queued.median_us);
  EXPECT_EQ(back.launch_stream_queued.launches_per_repetition, 4096u);
  EXPECT_DOUBLE_EQ(back.launch_stream_queued.repetition_ms, r.launch_stream_queued.repetition_ms);
  EXPECT_TRUE(absent_benchmarks(back).empty());
  EXPECT_EQ(back.shared_read.working_set_bytes, r.shared_read.working_set_bytes);
  EXPECT_FALSE(back.bf16_tensor.measured());
  EXPECT_EQ(back.bf16_tensor.unavailable_reason, "cuBLAS not found");
  EXPECT_EQ(back.clocks.sm_default_mhz, 1980u);
  ASSERT_EQ(back.flags.size(), 1u);
  EXPECT_EQ(back.flags[0].code, "benchmark_unavailable");
  EXPECT_EQ(nlohmann::json(back), j);
}

TEST(RooflineResult, AnOlderFileWithoutAFigureReadsWithItAbsent) {
  // A file written before the queued launch figure existed: still kjudge.roofline/1.
  nlohmann::json j = h200_like();
  j["benchmarks"].erase("launch_stream_queued");
  roofline_result back;
  from_json(j, back);
  EXPECT_EQ(absent_benchmarks(back), std::vector<std::string>{"launch_stream_queued"});
  EXPECT_FALSE(back.launch_stream_queued.measured());
  EXPECT_EQ(back.launch_stream_queued.unavailable_reason, absent_reason);
  EXPECT_TRUE(back.launch_stream.measured());
  const auto c = check_roofline(back);
  EXPECT_TRUE(c.launch_stream_queued_us.is_missing());
  EXPECT_NE(c.launch_stream_queued_us.failure().message.find(absent_reason), std::string::npos);
  EXPECT_TRUE(c.launch_stream_us.ok());
  EXPECT_FALSE(c.has_error());
  const auto text = render_text(back, c, "test");
  EXPECT_NE(text.find("launch, stream (queued, device)  n/a"), std::string::npos) << text;
  // With an empty benchmarks section every benchmark is absent.
  j["benchmarks"] = nlohmann::json::object();
  roofline_result none;
  from_json(j, none);
  EXPECT_EQ(absent_benchmarks(none).size(), 13u);
}

TEST(RooflineResult, RejectsSectionsThatAreNoObjectsAndNegativeCounts) {
  // Each was read as an empty or absurd device ("0 SMs", "-5 SMs, L2 17179869184.00 GiB").
  roofline_result r;
  {
    nlohmann::json j = h200_like();
    j["gpu"] = 5;
    EXPECT_THROW(from_json(j, r), kj::error);
  }
  {
    nlohmann::json j = h200_like();
    j["benchmarks"] = nlohmann::json::array({1});
    EXPECT_THROW(from_json(j, r), kj::error);
  }
  for (const char* field : {"sm_count", "l2_bytes"}) {
    nlohmann::json j = h200_like();
    j["gpu"][field] = -5;
    EXPECT_THROW(from_json(j, r), kj::error) << field;
  }
  from_json(nlohmann::json(h200_like()), r);  // the document itself reads
}

TEST(RooflineResult, RejectsAnotherSchema) {
  nlohmann::json j = h200_like();
  j["schema"] = "kjudge.roofline/0";
  roofline_result r;
  EXPECT_THROW(from_json(j, r), kj::error);
  EXPECT_THROW(from_json(nlohmann::json::array(), r), kj::error);
}

/** Clocks as NVML gives them on the H200 VM: 1980 MHz throughout (benchmarks.md); the count is
 *  made up. */
measure::detail::clock_observations h200_clocks() {
  measure::detail::clock_observations seen;
  seen.available = true;
  seen.source = "nvml";
  seen.spread = measure::detail::clock_spread{91, 1980, 1980, 1980};
  seen.default_sm_mhz = 1980;
  seen.max_sm_mhz = 1980;
  seen.reasons = {"gpu_idle"};
  return seen;
}

std::string clock_line(const roofline_result& r) {
  const auto text = render_text(r, check_roofline(r), "test");
  const auto begin = text.find("SM clock during the run");
  if (begin == std::string::npos) return text;
  return text.substr(begin, text.find('\n', begin) - begin);
}

TEST(RooflineClocks, TheMonitorsReadingsGiveTheReportLineAndJson) {
  auto r = h200_like();
  r.clocks = summarise_clocks(h200_clocks());
  EXPECT_EQ(clock_line(r), "SM clock during the run: 1980-1980 MHz (median 1980, default 1980)");
  // Unlike the timing engine's record, the roofline keeps "gpu_idle": it reads while a launch
  // should be running.
  EXPECT_EQ(nlohmann::json(r)["clocks"].dump(),
            R"({"clock_event_reasons":["gpu_idle"],"readings":91,"sm_boost_mhz":1980,)"
            R"("sm_default_mhz":1980,"sm_max_mhz":1980.0,"sm_median_mhz":1980.0,)"
            R"("sm_min_mhz":1980.0,"source":"nvml"})");
}

TEST(RooflineClocks, MinMedianAndMaxComeFromTheSpread) {
  auto seen = h200_clocks();
  seen.spread = measure::detail::clock_spread{4, 1755, 1965, 1995};
  auto r = h200_like();
  r.clocks = summarise_clocks(seen);
  EXPECT_EQ(r.clocks.readings, 4u);
  EXPECT_EQ(clock_line(r), "SM clock during the run: 1755-1995 MHz (median 1965, default 1980)");
}

TEST(RooflineClocks, AMissingDefaultClockIsNotReplacedByTheMaximum) {
  auto seen = h200_clocks();
  seen.default_sm_mhz.reset();
  auto r = h200_like();
  r.clocks = summarise_clocks(seen);
  EXPECT_FALSE(r.clocks.sm_default_mhz.has_value());
  EXPECT_EQ(r.clocks.sm_boost_mhz, 1980u);
  EXPECT_EQ(clock_line(r), "SM clock during the run: 1980-1980 MHz (median 1980)");
  EXPECT_TRUE(nlohmann::json(r)["clocks"]["sm_default_mhz"].is_null());
}

TEST(RooflineClocks, WithoutNvmlTheReportSaysWhy) {
  auto r = h200_like();
  r.clocks = summarise_clocks(
      measure::detail::clock_monitor::unavailable("libnvidia-ml.so.1 not found").observations());
  EXPECT_EQ(r.clocks.readings, 0u);
  EXPECT_FALSE(r.clocks.sm_min_mhz.has_value());
  EXPECT_FALSE(r.clocks.sm_boost_mhz.has_value());
  EXPECT_EQ(clock_line(r), "SM clock during the run: not read (libnvidia-ml.so.1 not found)");
  EXPECT_EQ(nlohmann::json(r)["clocks"].dump(),
            R"({"clock_event_reasons":[],"readings":0,"sm_boost_mhz":null,"sm_default_mhz":null,)"
            R"("sm_max_mhz":null,"sm_median_mhz":null,"sm_min_mhz":null,)"
            R"("source":"libnvidia-ml.so.1 not found"})");
}

TEST(RooflineResult, BestIsMaxForRatesAndMinForLatencies) {
  bandwidth_figure b;
  b.repetitions_tbps = {3.0, 3.9, 3.5};
  summarise(b);
  EXPECT_DOUBLE_EQ(b.best_tbps, 3.9);
  EXPECT_DOUBLE_EQ(b.median_tbps, 3.5);
  latency_figure l;
  l.repetitions_us = {2.6, 2.4, 2.5, 3.0};
  summarise(l);
  EXPECT_DOUBLE_EQ(l.best_us, 2.4);
  EXPECT_DOUBLE_EQ(l.median_us, 2.55);
}

TEST(RooflineCache, PathIsUuidAndDriverUnderTheCacheRoot) {
  const auto p = cache_path("/home/u/.cache/kjudge", "GPU-1234-abcd", 13000);
  EXPECT_EQ(p, fs::path("/home/u/.cache/kjudge/roofline/GPU-1234-abcd-13000.json"));
  // A UUID cannot climb out of the folder.
  const auto evil = cache_path("/c", "../../etc/x", 12040);
  EXPECT_EQ(evil.parent_path(), fs::path("/c/roofline"));
  EXPECT_EQ(evil.filename().string().find('/'), std::string::npos);
  EXPECT_THROW(static_cast<void>(cache_path("/c", "", 13000)), kj::error);
}

TEST(RooflineCache, WrittenResultLoadsForItsGpuOnly) {
  const auto root = temp_path("cache");
  fs::remove_all(root);
  const auto r = h200_like();
  const auto path = cache_path(root, r.gpu.uuid, r.gpu.driver_version);
  std::string why;
  EXPECT_FALSE(load_cached(path, r.gpu.uuid, 13000, &why));
  EXPECT_NE(why.find("no cached result"), std::string::npos) << why;

  write_file_atomic(path, to_document(r, check_roofline(r)).dump(2));
  const auto back = load_cached(path, r.gpu.uuid, 13000, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_DOUBLE_EQ(back->dram_copy.best_tbps, 4.30);
  // Another driver or another GPU: re-measure.
  EXPECT_FALSE(load_cached(path, r.gpu.uuid, 13010, &why));
  EXPECT_FALSE(load_cached(path, "GPU-other", 13000, &why));
  // A damaged file is not an error for the cache (it is re-measured), but it is for --from.
  std::ofstream(path) << "{ not json";
  EXPECT_FALSE(load_cached(path, r.gpu.uuid, 13000, &why));
  EXPECT_NE(why.find("unusable"), std::string::npos) << why;
  EXPECT_THROW(static_cast<void>(read_result(path)), kj::error);
  fs::remove_all(root);
}

TEST(RooflineCache, AFileWithoutAFigureOfThisKjudgeIsMeasuredAgain) {
  const auto root = temp_path("older");
  fs::remove_all(root);
  const auto r = h200_like();
  const auto path = cache_path(root, r.gpu.uuid, r.gpu.driver_version);
  auto doc = to_document(r, check_roofline(r));
  doc["benchmarks"].erase("launch_stream_queued");
  write_file_atomic(path, doc.dump(2));
  std::string why;
  EXPECT_FALSE(load_cached(path, r.gpu.uuid, 13000, &why));
  EXPECT_NE(why.find("older kjudge"), std::string::npos) << why;
  EXPECT_NE(why.find("launch_stream_queued"), std::string::npos) << why;
  // --from still shows it, the missing figure as not measured.
  const auto back = read_result(path);
  EXPECT_DOUBLE_EQ(back.launch_stream.best_us, 2.4);
  EXPECT_FALSE(back.launch_stream_queued.measured());
  fs::remove_all(root);
}

TEST(RooflineCheck, H200LikeFiguresPassAndGiveRidgePoints) {
  const auto r = h200_like();
  const auto c = check_roofline(r);
  ASSERT_NE(c.datasheet, nullptr);
  EXPECT_EQ(c.datasheet->key, "h200_sxm");
  EXPECT_FALSE(c.has_error());
  for (const auto& f : c.flags) ADD_FAILURE() << f.code << ": " << f.message;
  ASSERT_TRUE(c.dram_tbps.ok());
  EXPECT_DOUBLE_EQ(c.dram_tbps.value(), 4.30);  // the best DRAM figure: copy
  EXPECT_DOUBLE_EQ(c.l1_per_sm_tbps.value(), 31.0 / 132);
  // Both stream launch figures, host-issued and queued, each from its own measurement.
  ASSERT_TRUE(c.launch_stream_us.ok());
  EXPECT_DOUBLE_EQ(c.launch_stream_us.value(), 2.4);
  ASSERT_TRUE(c.launch_stream_queued_us.ok());
  EXPECT_DOUBLE_EQ(c.launch_stream_queued_us.value(), 1.7);
  EXPECT_DOUBLE_EQ(to_json(c)["launch_stream_queued_us"]["value"].get<double>(), 1.7);
  EXPECT_DOUBLE_EQ(to_json(c)["launch_stream_us"]["value"].get<double>(), 2.4);
  const auto text = render_text(r, c, "test");
  EXPECT_NE(text.find("launch, stream (host-issued)     2.40 us"), std::string::npos) << text;
  EXPECT_NE(text.find("launch, stream (queued, device)  1.70 us"), std::string::npos) << text;
  EXPECT_NE(text.find("4096 per repetition"), std::string::npos) << text;
  ASSERT_TRUE(c.fp32_ridge_flop_per_byte.ok());
  EXPECT_NEAR(c.fp32_ridge_flop_per_byte.value(), 60.0 / 4.30, 1e-9);
  EXPECT_NEAR(c.bf16_ridge_flop_per_byte.value(), 780.0 / 4.30, 1e-9);
  EXPECT_DOUBLE_EQ(ridge_flop_per_byte(67e12, 4.8e12), 67.0 / 4.8);
  EXPECT_EQ(ridge_flop_per_byte(67e12, 0.0), 0.0);
  // The roofs handed to `kjudge profile`, in bytes/s and FLOP/s.
  EXPECT_DOUBLE_EQ(c.ceilings.dram.measured_bytes_per_s, 4.30e12);
  EXPECT_DOUBLE_EQ(c.ceilings.dram.datasheet_bytes_per_s, 4.8e12);
  EXPECT_EQ(c.ceilings.dram.working_set_bytes, 960ull << 20);
  EXPECT_DOUBLE_EQ(c.ceilings.l1.measured_bytes_per_s, 31.0e12);
  EXPECT_DOUBLE_EQ(c.ceilings.at(profile::flop_type::tensor_bf16).measured_flop_per_s, 780e12);
  EXPECT_DOUBLE_EQ(c.ceilings.at(profile::flop_type::tensor_bf16).datasheet_dense_flop_per_s,
                   989.4e12);
  // Tensor work no microbenchmark measures has its dense datasheet peak as the roof.
  const auto& tf32 = c.ceilings.at(profile::flop_type::tensor_tf32);
  EXPECT_EQ(tf32.measured_flop_per_s, 0.0);
  EXPECT_DOUBLE_EQ(tf32.roof(), 494.7e12);
  EXPECT_DOUBLE_EQ(c.ceilings.at(profile::flop_type::tensor_fp64).roof(), 66.9e12);
  EXPECT_DOUBLE_EQ(c.ceilings.at(profile::flop_type::tensor_fp8).roof(), 1978.9e12);
}

TEST(RooflineCheck, SeedL1BelowL2IsFlaggedNotPrinted) {
  auto r = h200_like();
  // The seed page: a single short copy_ timed as "L1 bandwidth" and "L2 bandwidth".
  r.shared_read = bw(13.6e-3, 1 << 20);
  r.l2_read = bw(927.6e-3, 30ull << 20);
  const auto c = check_roofline(r);
  EXPECT_TRUE(c.has_error());
  EXPECT_TRUE(has_code(c.flags, "ceilings_out_of_order"));
  ASSERT_FALSE(c.l1_tbps.ok());
  EXPECT_EQ(c.l1_tbps.failure().code, "ceilings_out_of_order");
  EXPECT_FALSE(c.l2_tbps.ok());
  EXPECT_FALSE(c.l1_per_sm_tbps.ok());
  EXPECT_EQ(c.ceilings.l1.measured_bytes_per_s, 0.0);  // no roof from a failed figure
  EXPECT_TRUE(c.dram_tbps.ok());  // L2 below DRAM is not compared: L2 already failed
  // The table shows the flag where the number would be; only the flag's reason names it.
  const auto text = render_text(r, c, "test");
  const auto table = text.substr(0, text.find("\nflags:"));
  EXPECT_EQ(table.find("13.6 GB/s"), std::string::npos) << text;
  EXPECT_EQ(table.find("927.6 GB/s"), std::string::npos) << text;
  EXPECT_NE(table.find("flagged: ceilings_out_of_order"), std::string::npos) << text;
  EXPECT_NE(text.find("below the L2 ceiling 927.6 GB/s"), std::string::npos) << text;
  const auto doc = to_document(r, c);
  EXPECT_TRUE(doc["ceilings"]["l1_tbps"]["value"].is_null());
  EXPECT_EQ(doc["ceilings"]["l1_tbps"]["flags"][0]["code"], "ceilings_out_of_order");
}

TEST(RooflineCheck, L2BelowDramIsFlagged) {
  auto r = h200_like();
  r.l2_read = bw(2.0, 30ull << 20);
  const auto c = check_roofline(r);
  EXPECT_FALSE(c.l2_tbps.ok());
  EXPECT_FALSE(c.dram_tbps.ok());
  EXPECT_FALSE(c.fp32_ridge_flop_per_byte.ok());  // a ridge needs a passing DRAM ceiling
  EXPECT_TRUE(c.l1_tbps.ok());
}

TEST(RooflineCheck, EveryDramFigureIsComparedWithL2) {
  // L2 between the DRAM figures: the read figure above L2 breaks invariant 7 and is not shown,
  // the copy figure below it stays and becomes the DRAM ceiling.
  auto r = h200_like();
  r.dram_read = bw(4.6, 480ull << 20);
  r.dram_write = bw(4.3, 480ull << 20);
  r.dram_copy = bw(3.9, 960ull << 20);
  r.l2_read = bw(4.0, 30ull << 20);
  const auto c = check_roofline(r);
  EXPECT_FALSE(c.dram_read_tbps.ok());
  EXPECT_FALSE(c.dram_write_tbps.ok());
  ASSERT_TRUE(c.dram_copy_tbps.ok());
  ASSERT_TRUE(c.dram_tbps.ok());
  EXPECT_DOUBLE_EQ(c.dram_tbps.value(), c.dram_copy_tbps.value());
  EXPECT_FALSE(c.l2_tbps.ok()) << "L2 is one side of each broken pair";
}

TEST(RooflineCheck, ShortLaunchesAreFlagged) {
  auto r = h200_like();
  r.l2_read = bw(10.5, 30ull << 20, 0.004);  // one pass of a few microseconds
  r.fp64_fma = fl(31.0, 0.5);
  const auto c = check_roofline(r);
  ASSERT_FALSE(c.l2_tbps.ok());
  EXPECT_EQ(c.l2_tbps.failure().code, "launch_too_short");
  ASSERT_FALSE(c.fp64_tflops.ok());
  EXPECT_EQ(c.fp64_tflops.failure().code, "launch_too_short");
  EXPECT_TRUE(c.fp32_tflops.ok());
}

TEST(RooflineCheck, FiguresAboveTheDatasheetAreFlagged) {
  auto r = h200_like();
  r.dram_copy = bw(5.2, 960ull << 20);  // H200 datasheet: 4.8 TB/s
  r.fp32_fma = fl(70.0);                // datasheet 66.9
  r.bf16_tensor = fl(1500.0);           // sparse-like: datasheet dense 989.4
  const auto c = check_roofline(r);
  EXPECT_FALSE(c.dram_copy_tbps.ok());
  EXPECT_EQ(c.dram_copy_tbps.failure().code, "ceiling_above_datasheet");
  ASSERT_TRUE(c.dram_tbps.ok());  // read still passes and becomes the DRAM ceiling
  EXPECT_DOUBLE_EQ(c.dram_tbps.value(), 3.95);
  EXPECT_FALSE(c.fp32_tflops.ok());
  EXPECT_FALSE(c.bf16_tensor_tflops.ok());
  EXPECT_FALSE(c.bf16_ridge_flop_per_byte.ok());
  const auto text = render_text(r, c, "test");
  EXPECT_EQ(text.substr(0, text.find("\nflags:")).find("5.20 TB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("ceiling_above_datasheet"), std::string::npos) << text;
}

TEST(RooflineCheck, UnmeasuredAndOddFiguresAreNotNumbers) {
  auto r = h200_like();
  r.bf16_tensor = {};
  r.bf16_tensor.unavailable_reason = "cuBLAS not found";
  r.launch_graph.repetitions_us = {0.0, 0.0, 0.0, 0.0, 0.0};
  summarise(r.launch_graph);
  r.launch_stream_queued.repetitions_us = {0.0, 0.0, 0.0, 0.0, 0.0};
  summarise(r.launch_stream_queued);
  r.launch_stream = lat(2.4, 200);          // 0.48 ms repetitions: a warning, still a number
  r.fp32_fma.repetitions_tflops.resize(2);  // too few repetitions: a warning, still a number
  const auto c = check_roofline(r);
  ASSERT_FALSE(c.bf16_tensor_tflops.ok());
  EXPECT_TRUE(c.bf16_tensor_tflops.is_missing());
  EXPECT_NE(c.bf16_tensor_tflops.failure().message.find("cuBLAS not found"), std::string::npos);
  EXPECT_FALSE(c.launch_graph_us.ok());
  EXPECT_EQ(c.launch_graph_us.failure().code, "figure_not_positive");
  ASSERT_FALSE(c.launch_stream_queued_us.ok());
  EXPECT_EQ(c.launch_stream_queued_us.failure().code, "figure_not_positive");
  EXPECT_TRUE(to_json(c)["launch_stream_queued_us"]["value"].is_null());
  ASSERT_TRUE(c.launch_stream_us.ok());
  EXPECT_TRUE(has_code(c.launch_stream_us.flags(), "repetition_too_short"));
  EXPECT_TRUE(c.fp32_tflops.ok());
  EXPECT_TRUE(has_code(c.fp32_tflops.flags(), "few_repetitions"));
}

TEST(RooflineCheck, UnknownGpuSkipsOnlyTheDatasheetChecks) {
  auto r = h200_like();
  r.gpu.name = "NVIDIA Imaginary 9000";
  r.dram_copy = bw(9.0, 960ull << 20);
  const auto c = check_roofline(r);
  EXPECT_EQ(c.datasheet, nullptr);
  EXPECT_TRUE(c.dram_copy_tbps.ok());
  // 9 TB/s DRAM is still below L2 10.5 TB/s, so the order holds.
  EXPECT_TRUE(c.l2_tbps.ok());
  EXPECT_NE(render_text(r, c, "test").find("no datasheet entry"), std::string::npos);
}

TEST(RooflineCli, EveryOptionIsDocumented) {
  CLI::App app;
  app::roofline_args args;
  auto* cmd = app::add_roofline_command(app, args);
  const auto doc = app::help_section("roofline");
  ASSERT_FALSE(doc.empty()) << "no '## kjudge roofline' section in docs/cli.md";
  int checked = 0;
  for (const auto* opt : cmd->get_options())
    for (const auto& name : opt->get_lnames()) {
      EXPECT_NE(doc.find("`--" + name), std::string::npos) << "--" << name << " undocumented";
      ++checked;
    }
  EXPECT_GE(checked, 6);
  EXPECT_NE(app::help_section("").find("`roofline`"), std::string::npos);
}

}  // namespace
}  // namespace kj::roofline
