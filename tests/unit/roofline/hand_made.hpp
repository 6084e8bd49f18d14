#pragma once
// Hand-made roofline results for tests: figures in the bands anchors.md gives for an H200.

#include <cstdint>

#include <kjudge/roofline/result.hpp>

namespace kj::roofline::test {

inline bandwidth_figure bw(double tbps, std::uint64_t working_set, double launch_ms = 2.0) {
  bandwidth_figure f;
  f.repetitions_tbps = {tbps * 0.97, tbps, tbps * 0.98, tbps * 0.99, tbps * 0.96};
  f.working_set_bytes = working_set;
  f.bytes_per_launch = tbps * 1e12 * launch_ms * 1e-3;
  f.launch_ms = launch_ms;
  f.method = "hand-made";
  summarise(f);
  return f;
}

inline compute_figure fl(double tflops, double launch_ms = 2.0) {
  compute_figure f;
  f.repetitions_tflops = {tflops, tflops * 0.99, tflops * 0.98, tflops * 0.97, tflops * 0.995};
  f.flop_per_launch = tflops * 1e12 * launch_ms * 1e-3;
  f.launch_ms = launch_ms;
  f.method = "hand-made";
  summarise(f);
  return f;
}

inline latency_figure lat(double us, std::uint64_t per_rep) {
  latency_figure f;
  f.repetitions_us = {us * 1.02, us, us * 1.01, us * 1.03, us * 1.05};
  f.launches_per_repetition = per_rep;
  f.repetition_ms = us * static_cast<double>(per_rep) / 1000.0;
  f.method = "hand-made";
  summarise(f);
  return f;
}

/** Figures in the bands anchors.md gives for an H200. */
inline roofline_result h200_like() {
  roofline_result r;
  r.gpu.name = "NVIDIA H200";
  r.gpu.uuid = "GPU-12345678-abcd-ef01-2345-6789abcdef01";
  r.gpu.pci_bus_id = "00000000:19:00.0";
  r.gpu.cc_major = 9;
  r.gpu.sm_count = 132;
  r.gpu.l2_bytes = 60ull << 20;
  r.gpu.memory_bytes = 141ull << 30;
  r.gpu.driver_version = 13000;
  r.gpu.runtime_version = 13000;
  r.measured_at_utc = "2025-06-01T12:00:00Z";
  r.measure_s = 9.5;
  r.clocks.source = "nvml";
  r.clocks.readings = 40;
  r.clocks.sm_min_mhz = 1755;
  r.clocks.sm_median_mhz = 1980;
  r.clocks.sm_max_mhz = 1980;
  r.clocks.sm_default_mhz = 1980;
  r.dram_read = bw(3.95, 480ull << 20);
  r.dram_write = bw(3.80, 480ull << 20);
  r.dram_copy = bw(4.30, 960ull << 20);
  r.l2_read = bw(10.5, 30ull << 20);
  r.shared_read = bw(31.0, 132ull * 6 * 16384);
  r.fp32_fma = fl(60.0);
  r.fp64_fma = fl(31.0);
  r.fp16_tensor = fl(760.0);
  r.bf16_tensor = fl(780.0);
  r.launch_stream = lat(2.4, 2000);
  r.launch_stream_queued = lat(1.7, 4096);
  r.launch_graph = lat(0.9, 2000);
  r.round_trip = lat(9.0, 200);
  return r;
}

}  // namespace kj::roofline::test
