// `kjudge roofline` on a real GPU: every figure passes its invariants and stays under its
// datasheet peak, the run fits the 60 s budget, a cached result reads back fast, and on an H200
// the figures reach the bands of anchors.md. Skips where kj::cuda::probe() finds no GPU.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/measure.hpp>
#include <kjudge/roofline/report.hpp>

#include "require_gpu.hpp"

namespace kj::roofline {
namespace {

/** One measurement for the whole suite (it takes seconds). */
const roofline_result& measured() {
  static const roofline_result r = measure_roofline(measure_options{});
  return r;
}

bool is_h200(const checked_roofline& c) {
  return c.datasheet != nullptr && c.datasheet->key == "h200_sxm";
}

TEST(RooflineGpu, EveryFigurePassesItsInvariants) {
  KJ_REQUIRE_GPU();
  const auto& r = measured();
  const auto c = check_roofline(r);
  std::printf("%s", render_text(r, c, "gpu test").c_str());
  for (const auto& f : c.flags)
    if (f.severity == "error") ADD_FAILURE() << f.code << ": " << f.message;
  for (const auto* f :
       {&c.dram_tbps, &c.l2_tbps, &c.l1_tbps, &c.fp32_tflops, &c.fp64_tflops, &c.bf16_tensor_tflops,
        &c.fp16_tensor_tflops, &c.launch_stream_us, &c.launch_stream_queued_us, &c.launch_graph_us,
        &c.round_trip_us, &c.fp32_ridge_flop_per_byte, &c.bf16_ridge_flop_per_byte})
    EXPECT_TRUE(f->ok()) << (f->ok() ? "" : f->failure().code + ": " + f->failure().message);
  // Rule 19 and 20 directly, beside the checks.
  for (const auto* f : {&r.dram_read, &r.dram_write, &r.dram_copy, &r.l2_read, &r.shared_read}) {
    EXPECT_GE(f->launch_ms, 1.0);
    EXPECT_GE(f->repetitions_tbps.size(), 5u);
    EXPECT_GT(f->working_set_bytes, 0u);
  }
  EXPECT_GE(r.dram_read.working_set_bytes, 8 * r.gpu.l2_bytes);
  EXPECT_LE(r.l2_read.working_set_bytes, r.gpu.l2_bytes);
  for (const auto* f : {&r.fp32_fma, &r.fp64_fma, &r.bf16_tensor, &r.fp16_tensor})
    EXPECT_GE(f->launch_ms, 1.0);
  // The queued figure keeps every repetition: a hold that timed out would have thrown, leaving
  // the figure unmeasured with a benchmark_unavailable flag.
  EXPECT_EQ(r.launch_stream_queued.repetitions_us.size(),
            static_cast<std::size_t>(measure_options{}.repetitions));
}

TEST(RooflineGpu, EveryFigureIsBelowItsDatasheetPeak) {
  KJ_REQUIRE_GPU();
  const auto c = check_roofline(measured());
  if (c.datasheet == nullptr) GTEST_SKIP() << "no datasheet entry for " << measured().gpu.name;
  using device::datatype;
  const auto& d = *c.datasheet;
  for (const auto* f :
       {&c.dram_tbps, &c.fp32_tflops, &c.fp64_tflops, &c.bf16_tensor_tflops, &c.fp16_tensor_tflops})
    ASSERT_TRUE(f->ok()) << f->failure().code << ": " << f->failure().message;
  EXPECT_LT(c.dram_tbps.value(), d.memory_tbps);
  EXPECT_LT(c.fp32_tflops.value(), d.peak(datatype::fp32).value_or(1e9));
  EXPECT_LT(c.fp64_tflops.value(), d.peak(datatype::fp64).value_or(1e9));
  EXPECT_LT(c.bf16_tensor_tflops.value(), d.peak(datatype::bf16_tensor).value_or(1e9));
  EXPECT_LT(c.fp16_tensor_tflops.value(), d.peak(datatype::fp16_tensor).value_or(1e9));
}

TEST(RooflineGpu, H200ReachesTheAnchorBands) {
  KJ_REQUIRE_GPU();
  const auto& r = measured();
  const auto c = check_roofline(r);
  if (!is_h200(c)) GTEST_SKIP() << "bands are for an H200, this is " << r.gpu.name;
  for (const auto* f : {&c.dram_copy_tbps, &c.l2_tbps, &c.l1_tbps, &c.fp32_tflops,
                        &c.bf16_tensor_tflops, &c.launch_stream_us, &c.launch_stream_queued_us})
    ASSERT_TRUE(f->ok()) << f->failure().code << ": " << f->failure().message;
  EXPECT_GE(c.dram_copy_tbps.value(), 3.9);
  EXPECT_GE(c.l2_tbps.value(), 8.0);
  EXPECT_GE(c.l1_tbps.value(), 20.0);
  EXPECT_GE(c.fp32_tflops.value(), 55.0);
  EXPECT_GE(c.bf16_tensor_tflops.value(), 650.0);
  // "Launch latency on a stream <= 4 us" is the GPU's per-kernel cost: the queued figure. The
  // host-issued one is bounded by how fast this host's CPU calls cudaLaunchKernel, which varies
  // between sessions of one VM (above and below 4 us), so it only gets a loose sanity band. No
  // order between the two is asserted: nothing guarantees that the GPU runs a deep queue faster
  // per kernel than kernels that trickle in.
  EXPECT_LE(c.launch_stream_queued_us.value(), 4.0);
  EXPECT_GT(c.launch_stream_us.value(), 0.0);
  EXPECT_LT(c.launch_stream_us.value(), 20.0);
  EXPECT_LE(r.measure_s, 60.0) << "first run over the 60 s budget";
}

TEST(RooflineGpu, CachedResultReadsBackQuickly) {
  KJ_REQUIRE_GPU();
  const auto& r = measured();
  const auto root =
      std::filesystem::temp_directory_path() / ("kj_roofline_gpu_" + std::to_string(::getpid()));
  const auto path = cache_path(root, r.gpu.uuid, r.gpu.driver_version);
  write_file_atomic(path, to_document(r, check_roofline(r)).dump(2));
  const auto start = std::chrono::steady_clock::now();
  const auto back = load_cached(path, r.gpu.uuid, r.gpu.driver_version);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove_all(root);
  ASSERT_TRUE(back);
  EXPECT_DOUBLE_EQ(back->dram_copy.best_tbps, r.dram_copy.best_tbps);
  EXPECT_LT(s, 0.05);
}

}  // namespace
}  // namespace kj::roofline
