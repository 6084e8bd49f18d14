#pragma once
/** @file Runs every roofline microbenchmark on one GPU, in the calling process (docs/roofline.md).
 *  Each timed launch is calibrated to last about `target_launch_ms` (never under 1 ms, rule 19)
 *  and timed with CUDA events; each figure is the best of `repetitions` launches (rule 20). SM
 *  clocks are read through NVML while the launches run. Needs a GPU. */

#include <functional>
#include <string_view>

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

}  // namespace kj::roofline
