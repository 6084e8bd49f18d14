// The CUDA runtime layer: probe, device facts, RAII owners, NVML. Tests that need a device skip
// where kj::cuda::probe() finds none; the probe and NVML tests also run without one.

#include <gtest/gtest.h>

#include <regex>
#include <vector>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/device_buffer.hpp>
#include <kjudge/cuda/event.hpp>
#include <kjudge/cuda/nvml.hpp>
#include <kjudge/cuda/pinned_buffer.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/cuda/stream.hpp>

#include "require_gpu.hpp"

namespace {

TEST(cuda_probe, is_consistent_and_never_throws) {
  const kj::cuda::probe_result p = kj::cuda::probe();
  EXPECT_EQ(p.available, p.device_count > 0);
  if (!p.available) {
    EXPECT_FALSE(p.reason.empty());
  }
  // Cached: a second call says the same.
  const kj::cuda::probe_result q = kj::cuda::probe();
  EXPECT_EQ(p.available, q.available);
  EXPECT_EQ(p.reason, q.reason);
}

TEST(cuda_query_device, fills_device_facts) {
  KJ_REQUIRE_GPU();
  const kj::cuda::device_properties d = kj::cuda::query_device(0);
  EXPECT_FALSE(d.name.empty());
  EXPECT_TRUE(std::regex_match(
      d.uuid, std::regex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")))
      << d.uuid;
  EXPECT_FALSE(d.pci_bus_id.empty());
  EXPECT_GE(d.cc_major, 7);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.total_memory_bytes, std::size_t{1} << 30);
  EXPECT_GE(d.l2_bytes, std::size_t{1} << 20);
  EXPECT_GT(d.smem_per_block_optin_bytes, 0u);
  EXPECT_GT(d.sm_clock_khz, 100'000);  // > 100 MHz
  EXPECT_GT(d.memory_clock_khz, 100'000);
  EXPECT_GT(d.memory_bus_width_bits, 0);
  EXPECT_GE(d.driver_version, 12000);
  EXPECT_EQ(d.arch(), std::to_string(d.cc_major * 10 + d.cc_minor));
}

TEST(cuda_query_device, bad_ordinal_throws_cuda_error) {
  KJ_REQUIRE_GPU();
  try {
    static_cast<void>(kj::cuda::query_device(1000));
    FAIL() << "expected kj::error";
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), kj::error_kind::cuda);
    EXPECT_NE(e.message().find("cudaErrorInvalidDevice"), std::string::npos) << e.message();
  }
  // The error was cleared: the next call succeeds.
  EXPECT_NO_THROW(static_cast<void>(kj::cuda::query_device(0)));
}

TEST(cuda_raii, device_buffer_fill_reaches_every_byte) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  kj::cuda::device_buffer buf(4096 + 3);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), 4099u);
  buf.fill(0x5a, s.get());
  std::vector<unsigned char> host(buf.size(), 0);
  KJ_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), buf.data(), host.size(), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  for (const unsigned char b : host) ASSERT_EQ(b, 0x5a);

  kj::cuda::device_buffer moved = std::move(buf);
  EXPECT_EQ(buf.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(buf.size(), 0u);
  EXPECT_EQ(moved.size(), 4099u);
}

TEST(cuda_raii, pinned_buffer_is_mapped_and_zeroed) {
  KJ_REQUIRE_GPU();
  kj::cuda::pinned_buffer p(64);
  ASSERT_NE(p.data(), nullptr);
  ASSERT_NE(p.device_data(), nullptr);
  const auto* bytes = static_cast<const unsigned char*>(p.data());
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(bytes[i], 0);
  // A device-side write through the mapped pointer is visible on the host after a sync.
  kj::cuda::stream s;
  kj::cuda::device_buffer src(8);
  src.fill(0x11, s.get());
  KJ_CUDA_CHECK(cudaMemcpyAsync(p.device_data(), src.data(), 8, cudaMemcpyDefault, s.get()));
  s.synchronize();
  EXPECT_EQ(bytes[7], 0x11);
  EXPECT_EQ(bytes[8], 0);
}

TEST(cuda_raii, events_time_gpu_work) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  kj::cuda::event a, b;
  kj::cuda::device_buffer buf(std::size_t{64} << 20);
  a.record(s.get());
  buf.fill(1, s.get());
  b.record(s.get());
  b.synchronize();
  const kj::milliseconds t = kj::cuda::elapsed(a, b);
  EXPECT_GT(t.count(), 0.0);
  EXPECT_LT(t.count(), 1000.0);
}

TEST(cuda_nvml, available_or_says_why) {
  kj::cuda::nvml* n = kj::cuda::nvml::instance();
  if (n == nullptr) {
    EXPECT_FALSE(kj::cuda::nvml::unavailable_reason().empty());
    return;
  }
  EXPECT_TRUE(kj::cuda::nvml::unavailable_reason().empty());
  KJ_REQUIRE_GPU();
  const kj::cuda::device_properties d = kj::cuda::query_device(0);
  const auto dev = n->device(d.uuid, d.pci_bus_id);
  ASSERT_TRUE(dev.has_value()) << d.uuid << " " << d.pci_bus_id;
  const auto sm = n->sm_clock_mhz(*dev);
  ASSERT_TRUE(sm.has_value());
  EXPECT_GT(*sm, 0u);
  const auto max = n->max_sm_clock_mhz(*dev);
  ASSERT_TRUE(max.has_value());
  EXPECT_GE(*max, *sm);
  EXPECT_TRUE(n->clock_event_reasons(*dev).has_value());
  if (const auto t = n->temperature_c(*dev)) {
    EXPECT_GT(*t, 0u);
    EXPECT_LT(*t, 120u);
  }
}

TEST(cuda_nvml, names_reason_bits) {
  EXPECT_EQ(kj::cuda::nvml::reason_names(0), std::vector<std::string>{});
  EXPECT_EQ(kj::cuda::nvml::reason_names(0x4 | 0x40),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(kj::cuda::nvml::reason_names(0x1000), std::vector<std::string>{"0x1000"});
}

}  // namespace
