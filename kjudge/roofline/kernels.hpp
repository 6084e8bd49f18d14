#pragma once
/** @file Host entry points of the roofline microbenchmark kernels (kernels.cu). Each enqueues one
 *  launch on `stream` and returns at once; launch errors throw kj::error(cuda). Buffers are
 *  device memory owned by the caller; sizes are bytes and must be multiples of 16 (the kernels
 *  move 128-bit words). Every kernel folds what it reads into a value it stores only under a
 *  condition that never holds in practice, so the compiler cannot drop the loads. */

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace kj::roofline::detail {

/** The kernels, for occupancy queries. */
enum class kernel_kind {
  dram_read,
  dram_write,
  dram_copy,
  l2_read,
  shared_read,
  fp32_fma,
  fp64_fma,
};

/** Threads per block of every kernel here. */
inline constexpr int block_threads = 256;
/** Shared memory each block of the shared-read kernel reads, bytes (static allocation). */
inline constexpr std::size_t shared_bytes_per_block = 16 * 1024;
/** FMAs per thread per loop iteration of the FMA kernels (independent chains x unroll). */
inline constexpr long long fma_per_iteration = 8 * 16;
/** Shared-memory bytes each thread reads per loop iteration (four 128-bit loads). */
inline constexpr long long shared_bytes_per_iteration = 4 * 16;

/** Blocks of `kind` that fit on one SM at once (occupancy calculator); at least 1. */
[[nodiscard]] int resident_blocks_per_sm(kernel_kind kind);

/** Writes pseudo-random 32-bit words (a hash of the index and `seed`) to `bytes` bytes; no zeros
 *  are timed (rule 4). */
void fill_random(void* data, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);
/** Writes `count` pseudo-random bf16 (fp16 when `half`) values in [-1, 1). */
void fill_random_16bit(void* data, std::size_t count, bool half, std::uint32_t seed,
                       cudaStream_t stream);

/** Reads `bytes` of `data` `passes` times with 128-bit loads (grid-stride, 4 loads in flight per
 *  thread); `l2_only` loads with .cg (cached in L2, not L1). `sink`: 4 bytes of device memory. */
void launch_read(const void* data, std::size_t bytes, int passes, bool l2_only, int grid,
                 std::uint32_t* sink, cudaStream_t stream);
/** Writes `bytes` of `data` `passes` times with 128-bit stores. */
void launch_write(void* data, std::size_t bytes, int passes, int grid, cudaStream_t stream);
/** Copies `bytes` from `src` to `dst` `passes` times with 128-bit loads and stores. */
void launch_copy(const void* src, void* dst, std::size_t bytes, int passes, int grid,
                 cudaStream_t stream);
/** Each block fills shared_bytes_per_block of shared memory, then every thread reads 64 bytes
 *  (four ld.volatile.shared.v4) per iteration, `iterations` times. */
void launch_shared_read(long long iterations, int grid, float* sink, cudaStream_t stream);
/** `iterations` x fma_per_iteration dependent-chain FMAs per thread (8 independent chains). */
void launch_fp32_fma(long long iterations, int grid, float* sink, cudaStream_t stream);
void launch_fp64_fma(long long iterations, int grid, double* sink, cudaStream_t stream);
/** A kernel that does nothing (one block of one thread). */
void launch_empty(cudaStream_t stream);

}  // namespace kj::roofline::detail
