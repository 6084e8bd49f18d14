// A kernel that never finishes (the flag it waits for is never set).
#include <cuda_runtime.h>
#include <kjudge/candidate.h>

__global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

extern "C" KJ_EXPORT uint64_t kj_workspace_bytes(const kj_call*) {
  return 256;
}

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  auto stream = static_cast<cudaStream_t>(call->stream);
  cudaMemsetAsync(call->workspace, 0, sizeof(int), stream);
  spin<<<1, 1, 0, stream>>>(static_cast<volatile int*>(call->workspace));
  return 0;
}
