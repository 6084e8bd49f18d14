// Writes 1 GiB past the end of its output: an illegal memory access on the device.
#include <cuda_runtime.h>
#include <kjudge/candidate.h>

__global__ void scribble(float* out) {
  out[(1ull << 28) + threadIdx.x] = 1.0f;
}

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  scribble<<<1, 32, 0, static_cast<cudaStream_t>(call->stream)>>>(
      static_cast<float*>(call->outputs[0].data));
  return 0;
}
