// Phase stamps for examples/quantvla/fused.cu, compiled in with -DKJ_QUANTVLA_TRACE by
// bench/quantvla_phases/run.sh. Thread 0 of every block writes the global timer (ns, comparable
// across SMs) and its SM's clock64 (cycles, exact within a block) at each boundary:
//   0 entry, 1 the block's max|x| reduced (the cluster kernel: each warp's), 2 the scale known
//   (after the grid barrier; the cluster kernel: its wait for the maxima begins), 3 the first K
//   chunk landed in shared memory (the cluster kernel: the scale known), 4 blended, 5 GEMM done,
//   6 outputs stored;
// at entry, in the global timer's slot 7, the SM the block runs on (%smid); and in the clock's
// slot 7, where the strip kernel's thread 0 reaches the wait for the cluster's maxima (QV_READY),
// 1 if they had all landed by then and 2 if it had to wait (0: not recorded).
#pragma once

#include <cuda_runtime.h>

constexpr int kQvTraceBlocks = 4096;
constexpr int kQvStamps = 8;

/** [block][0..7] global timer, [block][8..15] clock64; zeroed by the harness between samples. */
__device__ unsigned long long qv_trace[kQvTraceBlocks][2 * kQvStamps];

__device__ __forceinline__ unsigned long long qv_global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned int qv_smid() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

#define QV_STAMP(i)                                                                       \
  do {                                                                                    \
    if (threadIdx.x == 0 && blockIdx.x < kQvTraceBlocks) {                                \
      qv_trace[blockIdx.x][(i)] = qv_global_timer_ns();                                   \
      qv_trace[blockIdx.x][kQvStamps + (i)] = static_cast<unsigned long long>(clock64()); \
      if ((i) == 0) qv_trace[blockIdx.x][kQvStamps - 1] = qv_smid();                      \
    }                                                                                     \
  } while (0)

#define QV_READY(landed)                                                \
  do {                                                                  \
    if (threadIdx.x == 0 && blockIdx.x < kQvTraceBlocks)                \
      qv_trace[blockIdx.x][2 * kQvStamps - 1] = (landed) ? 1ull : 2ull; \
  } while (0)

/** The trace buffer's device address, for the harness (another translation unit). */
extern "C" void* qv_trace_address() {
  void* p = nullptr;
  return cudaGetSymbolAddress(&p, qv_trace) == cudaSuccess ? p : nullptr;
}
