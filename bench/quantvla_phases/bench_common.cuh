// Shared by the QuantVLA bench harnesses (main.cu, read_paths.cu, graph_paths.cu, qv_instance.cuh):
// error exit, the cold samples' flush size, NVML's SM clock and the samples it drops, the spin
// kernel that holds a stream while a sample's launches queue, an empty kernel, graph capture,
// quantiles, and the floor kernels' block maximum.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace qv_bench {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

__global__ void empty_kernel() {}

/** A graph of what `issue()` launches on `stream`, instantiated and uploaded; with `begin` and
 *  `end` (not null), event record nodes for them before and after that work. */
template <class Issue>
cudaGraphExec_t capture_graph(cudaStream_t stream, Issue&& issue, cudaEvent_t begin = nullptr,
                              cudaEvent_t end = nullptr) {
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  if (begin != nullptr)
    check_cuda(cudaEventRecordWithFlags(begin, stream, cudaEventRecordExternal), "event node");
  issue();
  if (end != nullptr)
    check_cuda(cudaEventRecordWithFlags(end, stream, cudaEventRecordExternal), "event node");
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  check_cuda(cudaGraphDestroy(graph), "destroy graph");
  check_cuda(cudaGraphUpload(exec, stream), "upload");
  return exec;
}

/** The bytes written before each cold sample: `mib` MiB where given (a program's argument: > 0),
 *  else twice the current device's L2, as kjudge flushes. */
inline size_t flush_size(int mib = 0) {
  if (mib > 0) return static_cast<size_t>(mib) << 20;
  int device = 0, l2_bytes = 0;
  check_cuda(cudaGetDevice(&device), "device");
  check_cuda(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "L2 size");
  return 2 * static_cast<size_t>(l2_bytes);
}

/** NVML's SM clock (and clock-event reasons, read as kjudge's clock monitor reads them), through
 *  dlopen as kjudge loads it; the CUDA ordinal 0 taken as NVML's index 0 (one GPU visible, as on
 *  the bench machines). ok() is false where NVML cannot be read. */
class nvml_reader {
 public:
  nvml_reader() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    using init_fn = int (*)();
    using handle_fn = int (*)(unsigned, void**);
    const auto init = reinterpret_cast<init_fn>(dlsym(lib, "nvmlInit_v2"));
    const auto handle = reinterpret_cast<handle_fn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    m_clock = reinterpret_cast<clock_fn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    m_default = reinterpret_cast<clock_fn>(dlsym(lib, "nvmlDeviceGetDefaultApplicationsClock"));
    m_max = reinterpret_cast<clock_fn>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    m_reasons = reinterpret_cast<reasons_fn>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (m_reasons == nullptr)
      m_reasons =
          reinterpret_cast<reasons_fn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (init == nullptr || handle == nullptr || m_clock == nullptr || m_reasons == nullptr ||
        init() != 0 || handle(0, &m_device) != 0)
      m_device = nullptr;
  }
  [[nodiscard]] bool ok() const { return m_device != nullptr; }
  /** One reading; the SM clock in MHz (0 when NVML did not answer). */
  unsigned read() const {
    unsigned mhz = 0;
    unsigned long long reasons = 0;
    if (m_clock(m_device, kSm, &mhz) != 0) mhz = 0;
    static_cast<void>(m_reasons(m_device, &reasons));
    return mhz;
  }
  /** The clock samples are judged against, as kjudge's: the default applications SM clock, else
   *  the maximum, else 0 (unknown). */
  unsigned reference_mhz() const {
    for (const clock_fn f : {m_default, m_max}) {
      unsigned mhz = 0;
      if (ok() && f != nullptr && f(m_device, kSm, &mhz) == 0 && mhz > 0) return mhz;
    }
    return 0;
  }

 private:
  static constexpr int kSm = 1;  // NVML_CLOCK_SM
  using clock_fn = int (*)(void*, int, unsigned*);
  using reasons_fn = int (*)(void*, unsigned long long*);
  void* m_device = nullptr;
  clock_fn m_clock = nullptr;
  clock_fn m_default = nullptr;
  clock_fn m_max = nullptr;
  reasons_fn m_reasons = nullptr;
};

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/** The q-quantile of v (nearest rank); v must not be empty. */
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

/** The SM clock after every timed sample, judged as kjudge judges it (measurement rule 9): a
 *  sample taken under 75% of the reference clock (the default applications clock, else the
 *  maximum) is dropped. Keeps every reading NVML answered for summary(). */
class clock_watch {
 public:
  [[nodiscard]] bool ok() const { return m_nvml.ok(); }
  [[nodiscard]] unsigned reference_mhz() const { return m_reference; }
  /** NVML's SM clock now, in MHz; 0 where it cannot be read. */
  [[nodiscard]] unsigned read() const { return m_nvml.ok() ? m_nvml.read() : 0; }
  /** Records a timed sample's reading (0: none); true when that sample is to be dropped. */
  bool drop(unsigned mhz) {
    if (mhz == 0) return false;
    m_mhz.push_back(mhz);
    const bool slow = m_reference > 0 && mhz < 0.75 * m_reference;
    m_dropped += slow ? 1 : 0;
    return slow;
  }
  /** One line on the readings and the samples dropped (no newline). */
  [[nodiscard]] std::string summary() const {
    if (m_mhz.empty()) return "SM clock: NVML gave no reading; no sample dropped";
    char line[256];
    std::snprintf(line, sizeof line,
                  "SM clock read by NVML after each sample: %.0f to %.0f MHz (median %.0f, %zu "
                  "readings); %zu samples under 75%% of %u MHz dropped",
                  quantile(m_mhz, 0.0), quantile(m_mhz, 1.0), quantile(m_mhz, 0.5), m_mhz.size(),
                  m_dropped, m_reference);
    return line;
  }

 private:
  nvml_reader m_nvml;
  unsigned m_reference = m_nvml.reference_mhz();
  std::vector<double> m_mhz;
  std::size_t m_dropped = 0;
};

__device__ __forceinline__ float abs_max4(float4 f) {
  return fmaxf(fmaxf(fabsf(f.x), fabsf(f.y)), fmaxf(fabsf(f.z), fabsf(f.w)));
}

/** The maximum of every thread's `m` over a block of THREADS threads, stored to out[blockIdx.x]
 *  by thread 0. */
template <int THREADS>
__device__ __forceinline__ void store_block_max(float m, float* out) {
  __shared__ float s_red[THREADS / 32];
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) s_red[warp] = m;
  __syncthreads();
  if (tid == 0) {
    for (int k = 1; k < THREADS / 32; ++k) m = fmaxf(m, s_red[k]);
    out[blockIdx.x] = m;
  }
}

}  // namespace qv_bench
