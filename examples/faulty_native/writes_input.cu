// Computes out = 2 x correctly, then writes into its input (x[0] = 0), which the ABI passes as
// read-only. kjudge reports the input as modified (flag input_modified), also where the problem's
// input is not contiguous and the candidate was given a contiguous copy of it.
#include <kjudge/candidate.h>

#include <cuda_runtime.h>

namespace {

__global__ void twice(const float* in, float* out, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

__global__ void zero_first(float* in) {
  in[0] = 0.0f;
}

}  // namespace

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  const kj_tensor& x = call->inputs[0];
  long long n = 1;
  for (int d = 0; d < x.ndim; ++d) n *= x.shape[d];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  twice<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(call->outputs[0].data), n);
  zero_first<<<1, 1, 0, stream>>>(static_cast<float*>(x.data));
  return 0;
}
