#pragma once
// Test kernels with known behaviour, for checking the timing engine against ground truth.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace kj::test {

/** Enqueues one single-thread kernel that busy-waits `ns` nanoseconds of GPU global time after it
 *  starts. Asynchronous. Returns the launch status. */
[[nodiscard]] cudaError_t launch_spin(std::uint64_t ns, cudaStream_t stream);

/** Threads used by launch_read; `partial` must hold that many floats. */
inline constexpr std::size_t read_threads = 1024 * 256;

/** Enqueues a kernel that reads `count` float4 values of `data` (bandwidth-bound) and writes one
 *  partial sum per thread to `partial`. Asynchronous. Returns the launch status. */
[[nodiscard]] cudaError_t launch_read(const void* data, std::size_t count, float* partial,
                                      cudaStream_t stream);

}  // namespace kj::test
