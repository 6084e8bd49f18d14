#pragma once
/** @file The blocking kernel (nvbench's technique): a one-thread kernel that holds a stream until
 *  the host releases it, so the work the host issues meanwhile is queued and then runs back to
 * back, with the host's submission cost removed from the events around it. */

#include <cstdint>

#include <cuda_runtime_api.h>

namespace kj::measure::detail {

/** Enqueues on `stream` (asynchronous; returns at once) a kernel that spins until `*release`
 *  becomes non-zero or `timeout_ns` nanoseconds of GPU global time have passed since it started;
 *  on timeout it writes 1 to `*timed_out`. Both pointers are device pointers into mapped pinned
 *  host memory. Throws kj::error(cuda) when the launch fails. */
void launch_blocking_kernel(const int* release, int* timed_out, std::uint64_t timeout_ns,
                            cudaStream_t stream);

}  // namespace kj::measure::detail
