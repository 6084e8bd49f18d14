#include <kjudge/measure/blocking_kernel.hpp>

#include <kjudge/cuda/check.hpp>

namespace kj::measure::detail {

namespace {

/** GPU global timer, nanoseconds (same clock on every SM; resolution 32 ns to 1 us by GPU). */
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void blocking_kernel(const volatile int* release, volatile int* timed_out,
                                unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  // Every read of *release crosses the bus to host memory (volatile: never cached in a register).
  while (*release == 0) {
    if (global_timer_ns() - start >= timeout_ns) {
      *timed_out = 1;
      __threadfence_system();
      return;
    }
    __nanosleep(128);
  }
}

}  // namespace

void launch_blocking_kernel(const int* release, int* timed_out, std::uint64_t timeout_ns,
                            cudaStream_t stream) {
  blocking_kernel<<<1, 1, 0, stream>>>(release, timed_out,
                                       static_cast<unsigned long long>(timeout_ns));
  KJ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace kj::measure::detail
