#pragma once
/** @file One family of checks for CUDA runtime calls, built on one generic checker.
 *  KJ_CUDA_CHECK throws kj::error(cuda) with the call text, error name and string, after clearing
 *  a non-sticky error; KJ_CUDA_CHECK_NOTHROW logs to stderr and returns false (for destructors). */

#include <source_location>
#include <string>

#include <cuda_runtime_api.h>

namespace kj::cuda {

/** Throws kj::error(cuda) describing `status` if it is not cudaSuccess. */
void check(cudaError_t status, const char* expression,
           std::source_location where = std::source_location::current());
/** Returns true on success; otherwise prints one line to stderr and returns false. Never throws. */
bool check_nothrow(cudaError_t status, const char* expression,
                   std::source_location where = std::source_location::current()) noexcept;

/** True for errors after which the context is unusable (illegal address, launch failure, ...). */
[[nodiscard]] bool is_sticky(cudaError_t status) noexcept;

/** "cudaErrorIllegalAddress: an illegal memory access was encountered". */
[[nodiscard]] std::string describe(cudaError_t status);

}  // namespace kj::cuda

#define KJ_CUDA_CHECK(expr) ::kj::cuda::check((expr), #expr)
#define KJ_CUDA_CHECK_NOTHROW(expr) ::kj::cuda::check_nothrow((expr), #expr)
