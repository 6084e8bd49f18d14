// Launches with 2048 threads a block, more than any NVIDIA GPU allows, and does not check the
// launch: the runtime refuses it (cudaErrorInvalidValue with CUDA 13.0) and nothing runs.
// kj_forward returns 0 all the same, so only the error its own CUDA runtime recorded tells the
// refused launch from wrong values.
#include <cuda_runtime.h>
#include <kjudge/candidate.h>

__global__ void fill(float* out, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = 0.0f;
}

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  const kj_tensor& out = call->outputs[0];
  long long n = 1;
  for (int d = 0; d < out.ndim; ++d) n *= out.shape[d];
  fill<<<static_cast<unsigned>((n + 2047) / 2048), 2048, 0,
         static_cast<cudaStream_t>(call->stream)>>>(static_cast<float*>(out.data), n);
  return 0;
}
