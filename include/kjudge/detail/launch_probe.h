/* Compiled into every native candidate by kjudge (nvcc -include), not for candidates to use.
 *
 * A candidate library links its own copy of the CUDA runtime (nvcc's static cudart, its symbols
 * hidden), whose per-thread error state kjudge's runtime cannot read: a launch that runtime
 * refused (too many threads, too much shared memory, a zero grid) leaves no trace kjudge can see
 * and the outputs unwritten. After each kj_forward that returned 0, kjudge calls this function,
 * which runs inside the candidate's library and so reads and clears that runtime's last error.
 * It returns the error's code (0: none) and writes "cudaErrorX: description" into `message`.
 */
#ifndef KJUDGE_DETAIL_LAUNCH_PROBE_H
#define KJUDGE_DETAIL_LAUNCH_PROBE_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((visibility("default"), used)) int kjudge_launch_probe_v1(char* message,
                                                                        unsigned long capacity) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  if (message != 0 && capacity > 0)
    snprintf(message, capacity, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
  return (int)e;
}

#ifdef __cplusplus
}
#endif

#endif /* KJUDGE_DETAIL_LAUNCH_PROBE_H */
