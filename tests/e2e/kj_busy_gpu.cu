// Another program on the GPU, for the end-to-end tests: makes a CUDA context, prints "ready",
// then until killed (or `seconds` pass) either holds it idle, launches an empty kernel every
// `period_us` microseconds (as the H200 experiment that moved a reference's figure by 12.5% did),
// or, with query:<period_us>, only asks the driver whether its stream is idle that often.
// Usage: kj_busy_gpu <period_us | idle | query:period_us> [seconds]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

__global__ void empty_kernel() {}

int fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "kj_busy_gpu: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool idle = argc < 2 || std::strcmp(argv[1], "idle") == 0;
  const bool query = !idle && std::strncmp(argv[1], "query:", 6) == 0;
  const long period_us = idle ? 0 : std::atol(argv[1] + (query ? 6 : 0));
  const double seconds = argc > 2 ? std::atof(argv[2]) : 120.0;
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess) return fail("context", e);
  empty_kernel<<<1, 32>>>();
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return fail("first kernel", e);
  std::printf("ready\n");
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    if (idle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (query) {
      static_cast<void>(cudaStreamQuery(nullptr));
    } else {
      empty_kernel<<<1, 32>>>();
      if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return fail("kernel", e);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(period_us));
  }
  return 0;
}
