// Why does a short forward read faster on a GPU that another process keeps busy? (The nineteenth
// session: next to a process launching a small kernel every millisecond, kjudge read the QuantVLA
// reference's graph at 33.7 µs against 38.5 µs alone, with the same CUPTI kernel durations.)
//
// Each sample is taken as kjudge takes one: the stamps reset, L2 flushed (a kernel writing twice
// the L2), synchronised, then the host stays idle for `gap` µs, queues a hold kernel, an event, a
// graph of K probe kernels and an event, waits `hold` µs and releases the hold kernel. Every probe
// kernel (132 blocks of 128 threads) spins for a fixed number of SM cycles; thread 0 of each block
// reads the global timer (ns) and clock64 (SM cycles) before and after, so each kernel gives:
//   its span (first block's start to last block's end), the gaps between kernels, and
//   the SM clock it ran at: cycles / ns over block 0's spin.
// The hold kernel reports the clock over its own spin too (the clock just before the sample).
// Configurations run in blocks of consecutive samples (the GPU's state follows its recent
// history), twice over in the same order. Prints medians per configuration.
//
// Usage:
//   idle_clock measure <label> [samples] [read] the configurations below, K = 1 and K = 14; with
//                                               `read`, each probe thread first loads a float4
//                                               of its kernel's cold 256 KiB
//   idle_clock measure-thread <label> [samples] the same with a thread of this process
//                                               launching an empty kernel every millisecond on
//                                               a stream of its own (the same CUDA context)
//   idle_clock neighbour <period_us> <seconds> another process: an empty kernel every period
//                                               (prints "ready" once its context exists)
// Run by bench/gpu_idle/run.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

constexpr int kMaxKernels = 16;
constexpr int kProbeBlocks = 132;
constexpr long long kProbeCycles = 1500;  // ~0.76 µs at 1980 MHz

struct stamps {
  unsigned long long start_ns[kMaxKernels];  // earliest block start (atomicMin)
  unsigned long long end_ns[kMaxKernels];    // latest block end (atomicMax)
  unsigned long long cycles[kMaxKernels];    // block 0's spin, SM cycles
  unsigned long long spin_ns[kMaxKernels];   // block 0's spin, ns
  unsigned long long hold_cycles;            // the hold kernel's spin
  unsigned long long hold_ns;
  unsigned long long hold_end_ns;
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/** With `src` (not null), every thread first loads one float4 of kernel k's own 256 KiB region
 *  (cold after the flush: a DRAM round trip), and thread 0 waits for its warp's loads. */
__global__ void probe_kernel(stamps* s, int k, const float4* src, float* sink) {
  const unsigned long long entry = global_ns();
  if (src != nullptr) {
    const float4 v =
        src[static_cast<size_t>(k) * kProbeBlocks * 128 + blockIdx.x * 128 + threadIdx.x];
    const float sum = __shfl_sync(0xffffffffu, v.x + v.y + v.z + v.w, 0);
    if (sum == -1.0f) sink[0] = sum;  // never true: keeps the load
  }
  if (threadIdx.x != 0) return;
  const unsigned long long t0 = global_ns();  // the clock is read over the spin alone
  const long long c0 = clock64();
  long long c1 = c0;
  while (c1 - c0 < kProbeCycles) c1 = clock64();
  const unsigned long long t1 = global_ns();
  atomicMin(&s->start_ns[k], entry);
  atomicMax(&s->end_ns[k], t1);
  if (blockIdx.x == 0) {
    s->cycles[k] = static_cast<unsigned long long>(c1 - c0);
    s->spin_ns[k] = t1 - t0;
  }
}

/** Holds the stream until the host writes 1 to *flag (mapped host memory), or ~50 ms pass. */
__global__ void hold_kernel(volatile int* flag, stamps* s) {
  const unsigned long long t0 = global_ns();
  const long long c0 = clock64();
  unsigned long long t1 = t0;
  while (*flag == 0 && t1 - t0 < 50000000ull) t1 = global_ns();
  const long long c1 = clock64();
  t1 = global_ns();
  s->hold_cycles = static_cast<unsigned long long>(c1 - c0);
  s->hold_ns = t1 - t0;
  s->hold_end_ns = t1;
}

__global__ void flush_kernel(float4* p, size_t n4, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_float4(v, v, v, v);
}

__global__ void empty_kernel() {}

void busy_wait_us(double us) {
  if (us <= 0) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(long(us * 1000));
  while (std::chrono::steady_clock::now() < end) {
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

struct config {
  double gap_us;   // host idle between the flush's synchronisation and the sample's launches
  double hold_us;  // how long the hold kernel holds the queued sample
  int kernels;     // K
};

struct result_row {
  std::vector<double> event_us, span_us, gaps_us, first_mhz, last_mhz, hold_mhz, lead_us;
};

int run_neighbour(double period_us, double seconds) {
  check(cudaSetDevice(0), "set device");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  empty_kernel<<<1, 32, 0, s>>>();
  check(cudaStreamSynchronize(s), "sync");
  std::printf("ready\n");
  std::fflush(stdout);
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(long(seconds * 1e3));
  long n = 0;
  while (std::chrono::steady_clock::now() < end) {
    empty_kernel<<<1, 32, 0, s>>>();
    check(cudaStreamSynchronize(s), "sync");
    ++n;
    std::this_thread::sleep_for(std::chrono::microseconds(long(period_us)));
  }
  std::printf("neighbour launched %ld kernels\n", n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: idle_clock measure|measure-thread <label> [samples] | neighbour <period_us> <s>\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "neighbour") {
    return run_neighbour(argc > 2 ? std::atof(argv[2]) : 1000, argc > 3 ? std::atof(argv[3]) : 30);
  }
  const std::string label = argc > 2 ? argv[2] : "run";
  const int samples = argc > 3 ? std::max(20, std::atoi(argv[3])) : 150;
  const bool reads = argc > 4 && std::strcmp(argv[4], "read") == 0;
  const int warmup = 20;

  check(cudaSetDevice(0), "set device");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "props");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  std::atomic<bool> stop{false};
  std::thread side;
  if (mode == "measure-thread") {
    side = std::thread([&] {
      check(cudaSetDevice(0), "set device (thread)");
      cudaStream_t s2;
      check(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream (thread)");
      while (!stop.load()) {
        empty_kernel<<<1, 32, 0, s2>>>();
        check(cudaStreamSynchronize(s2), "sync (thread)");
        std::this_thread::sleep_for(std::chrono::microseconds(1000));
      }
    });
  }

  const size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize);
  float4* flush_buf = nullptr;
  check(cudaMalloc(&flush_buf, flush_bytes), "flush buffer");
  stamps* d_stamps = nullptr;
  check(cudaMalloc(&d_stamps, sizeof(stamps)), "stamps");
  stamps h{};
  int* flag = nullptr;
  check(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped), "flag");
  int* d_flag = nullptr;
  check(cudaHostGetDevicePointer(&d_flag, flag, 0), "flag pointer");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");

  float4* src = nullptr;
  float* sink = nullptr;
  if (reads) {
    check(cudaMalloc(&src, sizeof(float4) * kMaxKernels * kProbeBlocks * 128), "read buffer");
    check(cudaMemset(src, 0, sizeof(float4) * kMaxKernels * kProbeBlocks * 128), "read buffer");
    check(cudaMalloc(&sink, sizeof(float)), "sink");
  }
  // One graph per K: K probe kernels.
  cudaGraphExec_t graphs[kMaxKernels + 1] = {};
  for (int K : {1, 14}) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    for (int k = 0; k < K; ++k)
      probe_kernel<<<kProbeBlocks, 128, 0, stream>>>(d_stamps, k, src, sink);
    cudaGraph_t g;
    check(cudaStreamEndCapture(stream, &g), "end capture");
    check(cudaGraphInstantiate(&graphs[K], g, 0), "instantiate");
    check(cudaGraphDestroy(g), "destroy");
    check(cudaGraphUpload(graphs[K], stream), "upload");
  }

  const std::vector<config> configs = {
      {0, 0, 1},        {0, 0, 14},        {100, 0, 1},      {100, 0, 14},
      {1000, 0, 1},     {1000, 0, 14},     {10000, 0, 1},    {10000, 0, 14},
      {1000, 100, 1},   {1000, 100, 14},   {1000, 1000, 1},  {1000, 1000, 14},
      {10000, 1000, 1}, {10000, 1000, 14}, {10000, 5000, 1}, {10000, 5000, 14},
  };
  std::vector<result_row> rows(configs.size());

  stamps reset{};
  std::memset(&reset, 0, sizeof reset);
  for (int k = 0; k < kMaxKernels; ++k) reset.start_ns[k] = ~0ull;

  auto take = [&](const config& c, result_row* row) {
    check(cudaMemcpyAsync(d_stamps, &reset, sizeof reset, cudaMemcpyHostToDevice, stream), "reset");
    flush_kernel<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(flush_buf, flush_bytes / 16,
                                                                   1.0f);
    check(cudaStreamSynchronize(stream), "flush sync");
    busy_wait_us(c.gap_us);
    *reinterpret_cast<volatile int*>(flag) = 0;
    hold_kernel<<<1, 32, 0, stream>>>(d_flag, d_stamps);
    check(cudaEventRecord(e0, stream), "record");
    check(cudaGraphLaunch(graphs[c.kernels], stream), "launch");
    check(cudaEventRecord(e1, stream), "record");
    busy_wait_us(c.hold_us);
    *reinterpret_cast<volatile int*>(flag) = 1;
    check(cudaStreamSynchronize(stream), "sample sync");
    if (row == nullptr) return;
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    check(cudaMemcpy(&h, d_stamps, sizeof h, cudaMemcpyDeviceToHost), "stamps");
    const int K = c.kernels;
    row->event_us.push_back(ms * 1e3);
    row->span_us.push_back((h.end_ns[K - 1] - h.start_ns[0]) * 1e-3);
    double gaps = 0;
    for (int k = 1; k < K; ++k) gaps += (double(h.start_ns[k]) - double(h.end_ns[k - 1])) * 1e-3;
    row->gaps_us.push_back(gaps);
    row->first_mhz.push_back(h.spin_ns[0] ? 1e3 * double(h.cycles[0]) / double(h.spin_ns[0]) : 0);
    row->last_mhz.push_back(
        h.spin_ns[K - 1] ? 1e3 * double(h.cycles[K - 1]) / double(h.spin_ns[K - 1]) : 0);
    row->hold_mhz.push_back(h.hold_ns ? 1e3 * double(h.hold_cycles) / double(h.hold_ns) : 0);
    row->lead_us.push_back((double(h.start_ns[0]) - double(h.hold_end_ns)) * 1e-3);
  };

  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < configs.size(); ++i) {
      for (int w = 0; w < warmup; ++w) take(configs[i], nullptr);
      for (int n = 0; n < samples / 2; ++n) take(configs[i], &rows[i]);
    }
  }
  stop = true;
  if (side.joinable()) side.join();

  std::printf("%-16s %-22s %8s %8s %8s %8s %8s %9s %9s %9s\n", "label", "gap/hold us, K", "event",
              "q1", "q3", "span", "gaps", "hold MHz", "k0 MHz", "kK MHz");
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& r = rows[i];
    char what[64];
    std::snprintf(what, sizeof what, "%.0f/%.0f, K=%d", configs[i].gap_us, configs[i].hold_us,
                  configs[i].kernels);
    std::printf("%-16s %-22s %8.2f %8.2f %8.2f %8.2f %8.2f %9.0f %9.0f %9.0f  lead %.2f us\n",
                label.c_str(), what, median(r.event_us), quantile(r.event_us, 0.25),
                quantile(r.event_us, 0.75), median(r.span_us), median(r.gaps_us),
                median(r.hold_mhz), median(r.first_mhz), median(r.last_mhz), median(r.lead_us));
  }
  return 0;
}
