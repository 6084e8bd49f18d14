#include "spin_kernels.hpp"

namespace kj::test {

namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < ns) {
  }
}

__global__ void read_kernel(const float4* data, std::size_t count, float* partial) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  for (std::size_t i = tid; i < count; i += stride) {
    const float4 v = data[i];
    sum += v.x + v.y + v.z + v.w;
  }
  partial[tid] = sum;
}

}  // namespace

cudaError_t launch_spin(std::uint64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(ns));
  return cudaGetLastError();
}

cudaError_t launch_read(const void* data, std::size_t count, float* partial, cudaStream_t stream) {
  read_kernel<<<1024, 256, 0, stream>>>(static_cast<const float4*>(data), count, partial);
  return cudaGetLastError();
}

}  // namespace kj::test
