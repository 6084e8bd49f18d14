// Computes out = Linear(x), skipping the quantise-and-blend step: close, but wrong.
#include <cuda_runtime.h>
#include <kjudge/candidate.h>

__global__ void linear(const float* x, const float* w, const float* b, float* out, long rows,
                       int d) {
  const long row = blockIdx.x;
  for (int n = threadIdx.x; n < d; n += blockDim.x) {
    float acc = b[n];
    for (int k = 0; k < d; ++k) acc += x[row * d + k] * w[static_cast<long>(n) * d + k];
    out[row * d + n] = acc;
  }
}

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  const kj_tensor& x = call->inputs[0];
  const int d = static_cast<int>(x.shape[2]);
  const long rows = x.shape[0] * x.shape[1];
  linear<<<static_cast<unsigned>(rows), 128, 0, static_cast<cudaStream_t>(call->stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(call->params[0].data),
      static_cast<const float*>(call->params[1].data), static_cast<float*>(call->outputs[0].data),
      rows, d);
  return 0;
}
