// The roofline microbenchmark kernels (docs/roofline.md says what each measures and why).
// Each loops inside the kernel so that one launch lasts milliseconds (rule 19); the host side
// (measure.cpp) picks the loop count. Nothing here synchronises.

#include <kjudge/roofline/kernels.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <kjudge/cuda/check.hpp>

namespace kj::roofline::detail {

namespace {

/** A value no kernel's fold reaches in practice: the stores guarded by it keep the loads alive. */
constexpr std::uint32_t never_u32 = 0x7f4a7c15u;
constexpr float never_f32 = -1.2345e30f;

/** Integer hash (a variant of "lowbias32"): cheap, well mixed, never all-zero output runs. */
__device__ __forceinline__ std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__global__ void fill_words_kernel(std::uint32_t* data, std::size_t words, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    data[i] =
        hash32(static_cast<std::uint32_t>(i) ^ hash32(seed + static_cast<std::uint32_t>(i >> 32)));
}

template <class T>
__global__ void fill_16bit_kernel(T* data, std::size_t count, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::uint32_t h = hash32(static_cast<std::uint32_t>(i) * 2654435761u ^ seed);
    const float v = static_cast<float>(h & 0xffffffu) * (1.0f / 8388608.0f) - 1.0f;  // [-1, 1)
    if constexpr (std::is_same_v<T, __half>)
      data[i] = __float2half(v);
    else
      data[i] = __float2bfloat16(v);
  }
}

template <bool L2Only>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if constexpr (L2Only)
    return __ldcg(p);  // ld.global.cg: cached in L2 only, so L1 cannot serve repeated passes
  else
    return *p;
}

/** fmaf for float, fma for double: one FFMA / DFMA instruction. */
__device__ __forceinline__ float fused(float a, float b, float c) {
  return fmaf(a, b, c);
}
__device__ __forceinline__ double fused(double a, double b, double c) {
  return fma(a, b, c);
}

__device__ __forceinline__ std::uint32_t fold(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

/** Grid-stride read of n 16-byte words, `passes` times; four independent loads per step keep
 *  enough bytes in flight to saturate DRAM. */
template <bool L2Only>
__global__ void __launch_bounds__(block_threads)
    read_kernel(const uint4* __restrict__ data, std::size_t n, int passes, std::uint32_t* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t acc = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::size_t i = start;
    for (; i + 3 * stride < n; i += 4 * stride) {
      const uint4 a = load16<L2Only>(data + i);
      const uint4 b = load16<L2Only>(data + i + stride);
      const uint4 c = load16<L2Only>(data + i + 2 * stride);
      const uint4 d = load16<L2Only>(data + i + 3 * stride);
      acc += fold(a) + fold(b) + fold(c) + fold(d);
    }
    for (; i < n; i += stride) acc += fold(load16<L2Only>(data + i));
  }
  if (acc == never_u32) *sink = acc;
}

__global__ void __launch_bounds__(block_threads)
    write_kernel(uint4* __restrict__ data, std::size_t n, int passes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    // The value changes with the pass, so no pass writes what the previous one left.
    const auto p = static_cast<std::uint32_t>(pass);
    const uint4 v = make_uint4(p, p ^ 0x9e3779b9u, static_cast<std::uint32_t>(start), ~p);
#pragma unroll 4
    for (std::size_t i = start; i < n; i += stride) data[i] = v;
  }
}

__global__ void __launch_bounds__(block_threads)
    copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n, int passes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    std::size_t i = start;
    for (; i + 3 * stride < n; i += 4 * stride) {
      const uint4 a = src[i];
      const uint4 b = src[i + stride];
      const uint4 c = src[i + 2 * stride];
      const uint4 d = src[i + 3 * stride];
      dst[i] = a;
      dst[i + stride] = b;
      dst[i + 2 * stride] = c;
      dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
  }
}

/** One 128-bit shared-memory load the compiler can neither drop nor hoist out of the loop
 *  (volatile at both the C++ and the PTX level), from a shared-space address. */
__device__ __forceinline__ float4 lds128(unsigned address) {
  float4 v;
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address));
  return v;
}

constexpr int shared_words = static_cast<int>(shared_bytes_per_block / 16);  // float4 per block
static_assert(shared_words == 4 * block_threads, "four 128-bit words per thread");

/** Each thread reads four float4 per iteration at fixed addresses: consecutive threads read
 *  consecutive 16-byte words, so a warp's load is conflict-free (four 128-byte wavefronts). */
__global__ void __launch_bounds__(block_threads)
    shared_read_kernel(long long iterations, float* sink) {
  __shared__ float4 buf[shared_words];
  for (int j = 0; j < 4; ++j)
    buf[threadIdx.x + j * block_threads] =
        make_float4(static_cast<float>(threadIdx.x), static_cast<float>(j), 1.0f, 0.5f);
  __syncthreads();
  const auto base = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x]));
  constexpr unsigned step = block_threads * 16;  // bytes between a thread's four words
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (long long it = 0; it < iterations; ++it) {
    const float4 v0 = lds128(base);
    const float4 v1 = lds128(base + step);
    const float4 v2 = lds128(base + 2 * step);
    const float4 v3 = lds128(base + 3 * step);
    a0 += (v0.x + v0.y) + (v0.z + v0.w);
    a1 += (v1.x + v1.y) + (v1.z + v1.w);
    a2 += (v2.x + v2.y) + (v2.z + v2.w);
    a3 += (v3.x + v3.y) + (v3.z + v3.w);
  }
  const float s = (a0 + a1) + (a2 + a3);
  if (s == never_f32) sink[blockIdx.x] = s;
}

/** Eight independent FMA chains per thread, 16 steps per iteration: latency is hidden by the
 *  chains and the resident warps, loop overhead is 2-3 instructions per 128 FMAs. `b` and `c`
 *  are kernel arguments, so nothing folds at compile time; x converges to c / (1 - b). */
template <class T>
__global__ void __launch_bounds__(block_threads)
    fma_kernel(long long iterations, T b, T c, T* sink) {
  T x0 = static_cast<T>(threadIdx.x) * static_cast<T>(1e-3);
  T x1 = x0 + T(1), x2 = x0 + T(2), x3 = x0 + T(3), x4 = x0 + T(4), x5 = x0 + T(5), x6 = x0 + T(6),
    x7 = x0 + T(7);
  static_assert(fma_per_iteration == 8 * 16, "8 chains x 16 steps");
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      x0 = fused(x0, b, c);
      x1 = fused(x1, b, c);
      x2 = fused(x2, b, c);
      x3 = fused(x3, b, c);
      x4 = fused(x4, b, c);
      x5 = fused(x5, b, c);
      x6 = fused(x6, b, c);
      x7 = fused(x7, b, c);
    }
  }
  const T s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  if (s == static_cast<T>(never_f32)) sink[blockIdx.x] = s;
}

__global__ void empty_kernel() {}

int blocks_for(std::size_t items) {
  const std::size_t blocks = (items + block_threads - 1) / block_threads;
  return static_cast<int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

template <class Kernel>
int occupancy(Kernel kernel) {
  int blocks = 0;
  KJ_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_threads, 0));
  return blocks > 0 ? blocks : 1;
}

}  // namespace

int resident_blocks_per_sm(kernel_kind kind) {
  switch (kind) {
    case kernel_kind::dram_read:
      return occupancy(read_kernel<false>);
    case kernel_kind::l2_read:
      return occupancy(read_kernel<true>);
    case kernel_kind::dram_write:
      return occupancy(write_kernel);
    case kernel_kind::dram_copy:
      return occupancy(copy_kernel);
    case kernel_kind::shared_read:
      return occupancy(shared_read_kernel);
    case kernel_kind::fp32_fma:
      return occupancy(fma_kernel<float>);
    case kernel_kind::fp64_fma:
      return occupancy(fma_kernel<double>);
  }
  return 1;
}

void fill_random(void* data, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  const std::size_t words = bytes / 4;
  fill_words_kernel<<<blocks_for(words), block_threads, 0, stream>>>(
      static_cast<std::uint32_t*>(data), words, seed);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void fill_random_16bit(void* data, std::size_t count, bool half, std::uint32_t seed,
                       cudaStream_t stream) {
  if (half)
    fill_16bit_kernel<__half>
        <<<blocks_for(count), block_threads, 0, stream>>>(static_cast<__half*>(data), count, seed);
  else
    fill_16bit_kernel<__nv_bfloat16><<<blocks_for(count), block_threads, 0, stream>>>(
        static_cast<__nv_bfloat16*>(data), count, seed);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_read(const void* data, std::size_t bytes, int passes, bool l2_only, int grid,
                 std::uint32_t* sink, cudaStream_t stream) {
  const auto* words = static_cast<const uint4*>(data);
  if (l2_only)
    read_kernel<true><<<grid, block_threads, 0, stream>>>(words, bytes / 16, passes, sink);
  else
    read_kernel<false><<<grid, block_threads, 0, stream>>>(words, bytes / 16, passes, sink);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_write(void* data, std::size_t bytes, int passes, int grid, cudaStream_t stream) {
  write_kernel<<<grid, block_threads, 0, stream>>>(static_cast<uint4*>(data), bytes / 16, passes);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_copy(const void* src, void* dst, std::size_t bytes, int passes, int grid,
                 cudaStream_t stream) {
  copy_kernel<<<grid, block_threads, 0, stream>>>(static_cast<const uint4*>(src),
                                                  static_cast<uint4*>(dst), bytes / 16, passes);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_shared_read(long long iterations, int grid, float* sink, cudaStream_t stream) {
  shared_read_kernel<<<grid, block_threads, 0, stream>>>(iterations, sink);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_fp32_fma(long long iterations, int grid, float* sink, cudaStream_t stream) {
  fma_kernel<float><<<grid, block_threads, 0, stream>>>(iterations, 0.999f, 0.001f, sink);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_fp64_fma(long long iterations, int grid, double* sink, cudaStream_t stream) {
  fma_kernel<double><<<grid, block_threads, 0, stream>>>(iterations, 0.999, 0.001, sink);
  KJ_CUDA_CHECK(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  KJ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace kj::roofline::detail
