// The CUPTI activity collector on a real device: known kernels and a memset inside start()/stop()
// come back as exactly those device records (demangled names, ns durations, the right stream), and
// the launch summary's cross-checks hold on them, or catch a kernel that escaped the timed stream.
// Skipped where kj::cuda::probe() finds no GPU or the build has no CUPTI.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <kjudge/cuda/device_buffer.hpp>
#include <kjudge/cuda/event.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/cuda/stream.hpp>
#include <kjudge/profile/cupti_activity.hpp>
#include <kjudge/profile/gpu_work_watch.hpp>
#include <kjudge/profile/launch_summary.hpp>

#include "spin_kernels.hpp"

#include "require_gpu.hpp"

namespace kj::profile {
namespace {

#define KJ_REQUIRE_GPU_AND_CUPTI()                                   \
  do {                                                               \
    KJ_REQUIRE_GPU();                                                \
    if (!cupti_built_in()) GTEST_SKIP() << "no CUPTI in this build"; \
  } while (0)

constexpr std::uint64_t spin_ns = 20'000;                   // 20 us each
constexpr std::size_t read_float4s = std::size_t{1} << 20;  // 16 MiB read

std::vector<kernel_record> by_start(std::vector<kernel_record> k) {
  std::sort(k.begin(), k.end(),
            [](const kernel_record& a, const kernel_record& b) { return a.start_ns < b.start_ns; });
  return k;
}

TEST(CuptiCollector, ThreeKernelsAndOneMemsetOnAStream) {
  KJ_REQUIRE_GPU_AND_CUPTI();
  cuda::stream s;
  cuda::device_buffer data(read_float4s * 16);
  cuda::device_buffer partial(test::read_threads * sizeof(float));
  data.fill(1, s.get());  // before the region: not a record of it
  s.synchronize();

  activity_collector c;
  ASSERT_TRUE(c.available()) << c.unavailable_reason();
  cuda::event before, after;
  ASSERT_TRUE(c.start()) << c.unavailable_reason();
  const auto sid = c.stream_id(s.get());  // launches nothing
  ASSERT_TRUE(sid.has_value());
  before.record(s.get());
  partial.fill(0, s.get());
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  ASSERT_EQ(
      test::launch_read(data.data(), read_float4s, static_cast<float*>(partial.data()), s.get()),
      cudaSuccess);
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  after.record(s.get());
  ASSERT_TRUE(c.stop()) << c.unavailable_reason();
  EXPECT_FALSE(c.collecting());

  const activity_records r = c.records();
  EXPECT_EQ(r.dropped, 0u);
  ASSERT_EQ(r.kernels.size(), 3u);
  ASSERT_EQ(r.count(memory_op::memset), 1u);
  EXPECT_EQ(r.count(memory_op::memcpy), 0u);

  const auto k = by_start(r.kernels);
  const char* expected[] = {"spin_kernel(unsigned long long)", "read_kernel(", "spin_kernel("};
  for (std::size_t i = 0; i < k.size(); ++i) {
    SCOPED_TRACE(k[i].name);
    EXPECT_EQ(k[i].name.rfind("_Z", 0), 0u);            // launched mangled
    EXPECT_NE(k[i].demangled_name.rfind("_Z", 0), 0u);  // shown demangled
    EXPECT_NE(k[i].demangled_name.find(expected[i]), std::string::npos) << k[i].demangled_name;
    EXPECT_NE(k[i].demangled_name.find("kj::test::"), std::string::npos);
    EXPECT_TRUE(k[i].timed());
    EXPECT_GT(k[i].duration().count(), 0.0);
    EXPECT_EQ(k[i].stream_id, *sid);
    EXPECT_GT(k[i].registers_per_thread, 0u);
  }
  // Durations are ns: a 20 us spin lasts at least 20'000 ns and far less than a second.
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    EXPECT_GE(k[i].duration().count(), static_cast<double>(spin_ns));
    EXPECT_LT(k[i].duration().count(), 1e7);
    EXPECT_EQ(k[i].grid.count(), 1u);
    EXPECT_EQ(k[i].block.count(), 1u);
  }
  EXPECT_EQ(k[1].grid.x, 1024u);
  EXPECT_EQ(k[1].block.x, 256u);
  EXPECT_EQ(k[0].context_id, k[1].context_id);

  const memory_record& m = r.memory_ops.front();
  EXPECT_EQ(m.op, memory_op::memset);
  EXPECT_EQ(m.bytes, test::read_threads * sizeof(float));
  EXPECT_EQ(m.stream_id, *sid);
  EXPECT_GT(m.duration().count(), 0.0);

  timed_forward t;
  t.event_time = cuda::elapsed(before, after);
  t.timed_stream = sid;
  const auto summary = checked_launches(r, t);
  ASSERT_TRUE(summary.ok()) << summary.failure().code << ": " << summary.failure().message;
  EXPECT_EQ(summary.value().kernel_launches, 3u);
  EXPECT_EQ(summary.value().memset_count, 1u);
  EXPECT_EQ(summary.value().kernel_streams, std::set<std::uint32_t>{*sid});
  // One stream, serial kernels: busy time equals the sum, and the events cover it.
  EXPECT_NEAR(summary.value().kernel_busy_time.count(), summary.value().kernel_time_sum.count(),
              1.0);
  EXPECT_GE(t.event_time.count(), summary.value().kernel_busy_time.count());
}

TEST(CuptiCollector, KernelOnAnUnjoinedSideStreamIsCaught) {
  KJ_REQUIRE_GPU_AND_CUPTI();
  cuda::stream timed_s, side_s;
  activity_collector c;
  ASSERT_TRUE(c.available()) << c.unavailable_reason();
  cuda::event before, after;
  // Load the spin kernel's module first (lazy loading): a first launch waits for it on the host
  // after `before` is recorded, and the event time would then cover the side stream's kernel too.
  ASSERT_EQ(test::launch_spin(spin_ns, timed_s.get()), cudaSuccess);
  timed_s.synchronize();
  ASSERT_TRUE(c.start()) << c.unavailable_reason();
  const auto timed_id = c.stream_id(timed_s.get());
  const auto side_id = c.stream_id(side_s.get());
  ASSERT_TRUE(timed_id && side_id);
  EXPECT_NE(*timed_id, *side_id);
  before.record(timed_s.get());
  ASSERT_EQ(test::launch_spin(spin_ns, timed_s.get()), cudaSuccess);
  // 20 ms, never joined: it outlasts the timed region even when the region's first launch pays
  // for CUPTI's instrumentation (about 2 ms on the H200).
  ASSERT_EQ(test::launch_spin(1000 * spin_ns, side_s.get()), cudaSuccess);
  after.record(timed_s.get());
  after.synchronize();
  timed_forward t;
  t.event_time = cuda::elapsed(before, after);
  ASSERT_TRUE(c.stop()) << c.unavailable_reason();
  t.timed_stream = timed_id;

  const activity_records r = c.records();
  ASSERT_EQ(r.kernels.size(), 2u);
  const launch_summary s = summarize_launches(r);
  EXPECT_EQ(s.kernel_streams, (std::set<std::uint32_t>{*timed_id, *side_id}));
  const auto flags = check_launch_summary(r, s, t);
  const auto has = [&](const char* code) {
    return std::any_of(flags.begin(), flags.end(), [&](const flag& f) { return f.code == code; });
  };
  EXPECT_TRUE(has("work_outside_timed_stream"));
  EXPECT_TRUE(has("kernels_outside_timed_region")) << "event " << t.event_time.count() << " ns";
}

TEST(CuptiCollector, EachRegionStartsEmpty) {
  KJ_REQUIRE_GPU_AND_CUPTI();
  cuda::stream s;
  activity_collector c;
  ASSERT_TRUE(c.start()) << c.unavailable_reason();
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  ASSERT_TRUE(c.stop());
  EXPECT_EQ(c.records().kernels.size(), 2u);

  // Launched outside any region: not recorded.
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  s.synchronize();

  ASSERT_TRUE(c.start());
  ASSERT_TRUE(c.stop());
  EXPECT_TRUE(c.records().kernels.empty());

  ASSERT_TRUE(c.start());
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  ASSERT_TRUE(c.stop());
  EXPECT_EQ(c.records().kernels.size(), 1u);
}

TEST(GpuWorkWatch, FiresOnceBeforeTheFirstLaunchFromAnyThreadAndNotAfterStop) {
  KJ_REQUIRE_GPU_AND_CUPTI();
  cuda::stream s;
  cuda::device_buffer data(1 << 20);  // allocated before: allocation is no GPU work
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);  // the module loaded
  s.synchronize();
  std::atomic<int> fired{0};
  std::string api;
  std::atomic<bool> kernel_done_at_fire{true};
  cuda::event marker;
  {
    gpu_work_watch w([&](std::string_view name) {
      ++fired;
      api = name;
    });
    ASSERT_TRUE(w.unavailable_reason().empty()) << w.unavailable_reason();
    EXPECT_TRUE(w.active());
    // Allocation, events, queries and synchronisation queue no work.
    cuda::device_buffer more(1 << 20);
    marker.record(s.get());
    static_cast<void>(cudaStreamQuery(s.get()));
    s.synchronize();
    EXPECT_EQ(fired.load(), 0) << api;  // nothing yet (an event record is not watched)
    // The first launch, from another thread: the handler runs on it, before the launch.
    std::thread t([&] { ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess); });
    t.join();
    EXPECT_EQ(fired.load(), 1);
    EXPECT_TRUE(api.starts_with("cudaLaunch") || api.starts_with("cuLaunch")) << api;
    EXPECT_EQ(w.fired_by(), api);
    EXPECT_FALSE(w.active());
    ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
    data.fill(0, s.get());
    s.synchronize();
    EXPECT_EQ(fired.load(), 1);  // once
    w.stop();
    EXPECT_TRUE(w.detach_error().empty()) << w.detach_error();  // CUPTI detached
    w.stop();                                                   // idempotent
  }
  {  // A copy is GPU work too; a stopped watch sees nothing.
    gpu_work_watch w([&](std::string_view name) {
      ++fired;
      api = name;
    });
    ASSERT_TRUE(w.unavailable_reason().empty()) << w.unavailable_reason();
    std::vector<char> host(1 << 20);
    ASSERT_EQ(
        cudaMemcpyAsync(host.data(), data.data(), host.size(), cudaMemcpyDeviceToHost, s.get()),
        cudaSuccess);
    s.synchronize();
    EXPECT_EQ(fired.load(), 2);
    EXPECT_TRUE(api.starts_with("cudaMemcpy") || api.starts_with("cuMemcpy")) << api;
  }
  {
    gpu_work_watch w([&](std::string_view) { ++fired; });
    w.stop();
    ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
    s.synchronize();
    EXPECT_EQ(fired.load(), 2);
  }
  // The activity collector, which the worker runs after its timing, still records after a
  // watch came and went.
  activity_collector c;
  ASSERT_TRUE(c.start()) << c.unavailable_reason();
  ASSERT_EQ(test::launch_spin(spin_ns, s.get()), cudaSuccess);
  ASSERT_TRUE(c.stop()) << c.unavailable_reason();
  EXPECT_EQ(c.records().kernels.size(), 1u);
}

TEST(GpuWorkWatch, AnotherThreadsGpuWorkWaitsForTheHandler) {
  // The handler waits (as the worker's waits for the GPU's lock); a launch from another thread
  // meanwhile must not pass it.
  KJ_REQUIRE_GPU_AND_CUPTI();
  cuda::stream first, second;
  ASSERT_EQ(test::launch_spin(spin_ns, first.get()), cudaSuccess);  // the module loaded
  first.synchronize();
  std::atomic<bool> in_handler{false};
  std::chrono::steady_clock::time_point handler_end;
  gpu_work_watch w([&](std::string_view) {
    in_handler = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    handler_end = std::chrono::steady_clock::now();
  });
  ASSERT_TRUE(w.unavailable_reason().empty()) << w.unavailable_reason();
  std::thread t([&] { ASSERT_EQ(test::launch_spin(spin_ns, first.get()), cudaSuccess); });
  while (!in_handler) std::this_thread::yield();
  ASSERT_EQ(test::launch_spin(spin_ns, second.get()), cudaSuccess);
  const auto launched = std::chrono::steady_clock::now();
  t.join();
  EXPECT_GE(launched, handler_end);
  w.stop();
  EXPECT_TRUE(w.detach_error().empty()) << w.detach_error();
}

}  // namespace
}  // namespace kj::profile
