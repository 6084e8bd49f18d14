#pragma once
/** @file Runs every roofline microbenchmark on one GPU, in the calling process (docs/roofline.md).
 *  Each timed launch is calibrated to last about `target_launch_ms` (never under 1 ms, rule 19)
 *  and timed with CUDA events; each figure is the best of `repetitions` launches (rule 20). SM
 *  clocks are read through NVML while the launches run. Needs a GPU. */

#include <functional>
#include <string_view>

#include <kjudge/measure/clock_monitor.hpp>
#include <kjudge/roofline/result.hpp>

namespace kj::roofline {

struct measure_options {
  int device = 0;                 ///< CUDA ordinal
  int repetitions = 7;            ///< timed launches per figure (>= 5)
  double target_launch_ms = 2.0;  ///< calibrated length of one timed launch (>= 1.2)
  int gemm_n = 8192;              ///< square GEMM size of the tensor figures
  /** Called with a short line before each benchmark ("DRAM read"); may be empty. */
  std::function<void(std::string_view)> progress;
};

/** Measures every figure. A benchmark that cannot run (cuBLAS missing, too little memory) is
 *  left unmeasured with its reason and a `benchmark_unavailable` flag. Throws kj::error(cuda)
 *  when the device cannot be used at all, kj::error(usage) on bad options. */
[[nodiscard]] roofline_result measure_roofline(const measure_options& options);

/** The result's clocks from what the timing engine's clock monitor saw while the launches ran:
 *  NVML's clocks as answered (no default substituted by the maximum) and every clock-event reason,
 *  "gpu_idle" included, since a reading taken while a launch should be running that finds the GPU
 *  idle is worth knowing about (the engine itself drops it: it reads after synchronising). */
[[nodiscard]] clock_summary summarise_clocks(const measure::detail::clock_observations& seen);

}  // namespace kj::roofline
