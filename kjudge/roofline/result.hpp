#pragma once
/** @file What `kjudge roofline` measured on one GPU: every microbenchmark with its repetitions,
 *  best and median, working set and launch length, plus the GPU's identity and its clocks during
 *  the run. Serialised as versioned JSON (schema `kjudge.roofline/1`, docs/roofline.md), which is
 *  also the per-GPU cache format. Units live in the field names: `_tbps` is 10^12 bytes/s,
 *  `_tflops` 10^12 FLOP/s, `_us` microseconds, `_ms` milliseconds, `_bytes` bytes. These are raw
 *  measurements: check_roofline() (check.hpp) decides which of them may be shown as ceilings. */

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/result.hpp>

namespace kj::roofline {

/** Bump on any incompatible change; a cache file of another schema is re-measured. Adding a
 *  benchmark is compatible: an older file reads with the new figure absent (absent_benchmarks()),
 *  and the cache re-measures it (cache.hpp). */
inline constexpr const char* roofline_schema = "kjudge.roofline/1";

/** A bandwidth microbenchmark. Each repetition is one timed launch. */
struct bandwidth_figure {
  std::vector<double> repetitions_tbps;  ///< bytes counted / launch time, one per repetition
  double best_tbps = 0;                  ///< the highest repetition (rule 20)
  double median_tbps = 0;
  std::uint64_t working_set_bytes = 0;  ///< distinct bytes the launch touches (the level it hits)
  double bytes_per_launch = 0;          ///< bytes counted per timed launch (copy: read + write)
  double launch_ms = 0;                 ///< median length of one timed launch (rule 19: >= 1 ms)
  std::string method;                   ///< one line: how the figure was measured
  std::string unavailable_reason;       ///< non-empty: not measured, and why

  [[nodiscard]] bool measured() const noexcept { return !repetitions_tbps.empty(); }
};

/** A compute-throughput microbenchmark. An FMA counts as 2 FLOP; a GEMM of m x n x k as 2mnk. */
struct compute_figure {
  std::vector<double> repetitions_tflops;
  double best_tflops = 0;
  double median_tflops = 0;
  double flop_per_launch = 0;
  double launch_ms = 0;  ///< median length of one timed launch
  std::string method;
  std::string unavailable_reason;

  [[nodiscard]] bool measured() const noexcept { return !repetitions_tflops.empty(); }
};

/** A latency microbenchmark: each repetition times `launches_per_repetition` operations and
 *  reports the time per operation. Best is the lowest. */
struct latency_figure {
  std::vector<double> repetitions_us;
  double best_us = 0;
  double median_us = 0;
  std::uint64_t launches_per_repetition = 0;
  double repetition_ms = 0;  ///< median length of one repetition
  std::string method;
  std::string unavailable_reason;

  [[nodiscard]] bool measured() const noexcept { return !repetitions_us.empty(); }
};

/** Which GPU, driver and runtime the figures belong to (the cache key is uuid + driver). */
struct gpu_identity {
  std::string name;  ///< as the CUDA runtime reports it: "NVIDIA H200"
  std::string uuid;  ///< "GPU-xxxxxxxx-..."
  std::string pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t smem_per_sm_bytes = 0;
  int driver_version = 0;   ///< CUDA driver API version, 13000 = 13.0
  int runtime_version = 0;  ///< kjudge's CUDA runtime
};

/** SM clocks read through NVML while the timed launches ran (read-only; never set). */
struct clock_summary {
  std::string source;  ///< "nvml", or why there are no readings
  std::uint64_t readings = 0;
  std::optional<double> sm_min_mhz, sm_median_mhz, sm_max_mhz;
  std::optional<unsigned> sm_default_mhz;        ///< default applications clock
  std::optional<unsigned> sm_boost_mhz;          ///< maximum SM clock
  std::vector<std::string> clock_event_reasons;  ///< every reason seen active during the run
};

/** One run of every microbenchmark on one GPU. */
struct roofline_result {
  std::string schema = roofline_schema;
  gpu_identity gpu;
  std::string measured_at_utc;  ///< ISO 8601, "2025-01-31T12:00:00Z"
  double measure_s = 0;         ///< wall time of the whole measurement
  clock_summary clocks;

  bandwidth_figure dram_read, dram_write, dram_copy;
  bandwidth_figure l2_read;
  bandwidth_figure shared_read;  ///< aggregate over all SMs (per SM: shared_per_sm_tbps())
  compute_figure fp32_fma, fp64_fma;
  compute_figure fp16_tensor, bf16_tensor;
  /** Empty kernels issued back to back by the host, events around them: bounded by the host's
   *  launch rate (cudaLaunchKernel), a property of the host CPU as much as of the GPU. */
  latency_figure launch_stream;
  /** Empty kernels queued on a stream held by the blocking kernel, then run back to back: the
   *  GPU's own cost per kernel on a stream, host submission removed. */
  latency_figure launch_stream_queued;
  latency_figure launch_graph, round_trip;
  std::vector<flag> flags;  ///< notes from the measurement (a benchmark that could not run)

  /** shared_read.best_tbps / SMs; 0 when either is unknown. */
  [[nodiscard]] double shared_per_sm_tbps() const noexcept {
    return gpu.sm_count > 0 ? shared_read.best_tbps / gpu.sm_count : 0.0;
  }
};

/** Fills best and median from the repetitions (best: max for rates, min for latencies). */
void summarise(bandwidth_figure& f);
void summarise(compute_figure& f);
void summarise(latency_figure& f);

void to_json(nlohmann::json& j, const roofline_result& r);
/** Throws kj::error(protocol) when the schema is not roofline_schema or a field has the wrong
 *  type. Unknown fields are ignored (a written file may carry a "ceilings" section). A benchmark
 *  the file has no entry for is left unmeasured with `absent_reason` as its reason. */
void from_json(const nlohmann::json& j, roofline_result& r);

/** The unavailable_reason from_json() gives a benchmark that the document has no entry for. */
inline constexpr const char* absent_reason =
    "not in this file (written by a kjudge that did not measure it)";

/** The JSON names of the benchmarks a result read by from_json() had no entry for (a file written
 *  before they were added: their reason is absent_reason), in report order; empty for a complete
 *  document. */
[[nodiscard]] std::vector<std::string> absent_benchmarks(const roofline_result& r);

}  // namespace kj::roofline
