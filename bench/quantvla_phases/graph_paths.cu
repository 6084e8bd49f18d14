// What the launch path adds to a device figure (kjudge times the device figure by CUDA graph
// replay by default, `--no-graph` by the forward's own launches). Every sample is cold (256 MiB
// written first) and queued behind a spin kernel, as kjudge takes it, for three kinds of work:
// an empty kernel of one block, the QuantVLA forward (kj_forward of the linked kernel source) and
// a chain of 14 small kernels (the eager reference launches 14); each timed by events around
//   eager:  the work's own launches;
//   graph:  cudaGraphLaunch of a graph of the work (captured once, on a non-blocking stream);
//   graph + nodes: a graph with an event record node before and after the work (cudaEventRecord-
//           External under capture), timed by the outer events and by those nodes' events;
// on a non-blocking stream, on a blocking one, and on the legacy default stream (torch's current
// stream unless a program sets another; two more blocking streams exist, as in a process that
// made some). Kinds rotate sample by sample. Prints medians and quartiles.
// Usage: graph_paths <label> [samples]. Run by bench/quantvla_phases/run.sh.
#include <cuda_runtime.h>

#include "bench_common.cuh"
#include "qv_instance.cuh"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace qv_bench;

/** y = 1.0001 x + 1 over n floats: one of the chain's small launches. */
__global__ void axpb_kernel(float* y, const float* x, int n) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x))
    y[i] = 1.0001f * x[i] + 1.0f;
}

constexpr int kChain = 14;

double ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  check_cuda(cudaEventElapsedTime(&ms, a, b), "elapsed");
  return ms;
}

void print_row(const std::string& label, const char* what, const std::vector<double>& us) {
  std::printf("%s: %-70s %7.2f us (q1 %.2f, q3 %.2f, min %.2f, n %zu)\n", label.c_str(), what,
              quantile(us, 0.5), quantile(us, 0.25), quantile(us, 0.75), quantile(us, 0.0),
              us.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string label = argc > 1 ? argv[1] : "fused";
  const int samples = argc > 2 ? std::max(10, std::atoi(argv[2])) : 300;
  const int warmup = 20;

  instance p(8, 64, 128, 99);
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  p.call.stream = stream;
  if (const double w = p.worst_error(); !(w <= 1.0)) {
    std::printf("%s: the forward is wrong (worst error %.3g x tolerance)\n", label.c_str(), w);
    return 1;
  }
  constexpr int kChainFloats = 64 * 1024;  // 256 KiB, as x
  float* chain_buf = nullptr;
  check_cuda(cudaMalloc(&chain_buf, 2 * kChainFloats * sizeof(float)), "cudaMalloc chain");
  check_cuda(cudaMemset(chain_buf, 0, 2 * kChainFloats * sizeof(float)), "chain fill");
  const size_t flush_bytes = size_t{256} << 20;
  void* flush = nullptr;
  check_cuda(cudaMalloc(&flush, flush_bytes), "cudaMalloc flush");
  cudaEvent_t outer0, outer1, inner0, inner1;
  for (cudaEvent_t* e : {&outer0, &outer1, &inner0, &inner1})
    check_cuda(cudaEventCreate(e), "event");
  cudaStream_t blocking, idle[2];
  check_cuda(cudaStreamCreate(&blocking), "stream");
  for (cudaStream_t& i : idle) check_cuda(cudaStreamCreate(&i), "stream");
  const cudaStream_t streams[3] = {stream, blocking, cudaStreamLegacy};
  const char* const stream_names[3] = {"non-blocking stream", "blocking stream", "legacy stream"};

  const char* const work_names[3] = {"empty kernel", "QuantVLA forward", "14 small kernels"};
  const std::function<void(cudaStream_t)> work[3] = {
      [&](cudaStream_t st) { empty_kernel<<<1, 32, 0, st>>>(); },
      [&](cudaStream_t st) {
        p.call.stream = st;
        p.forward();
        p.call.stream = stream;
      },
      [&](cudaStream_t st) {
        for (int i = 0; i < kChain; ++i)
          axpb_kernel<<<128, 256, 0, st>>>(chain_buf + (i + 1) % 2 * kChainFloats,
                                           chain_buf + i % 2 * kChainFloats, kChainFloats);
      }};
  cudaGraphExec_t plain[3], noded[3];
  for (int w = 0; w < 3; ++w) {
    const auto issue = [&] { work[w](stream); };
    plain[w] = capture_graph(stream, issue);
    noded[w] = capture_graph(stream, issue, inner0, inner1);
  }
  check_cuda(cudaStreamSynchronize(stream), "uploads");

  // Per work and stream: eager, graph, graph + nodes (outer), graph + nodes (inner).
  std::vector<double> us[3][3][4];
  constexpr int kPaths = 3, kKinds = 3 * 3 * kPaths;
  for (int s = 0; s < kKinds * (samples + warmup); ++s) {
    const int kind = s % kKinds, w = kind / (3 * kPaths), k = kind % (3 * kPaths) / kPaths,
              path = kind % kPaths;
    const cudaStream_t st = streams[k];
    check_cuda(cudaMemsetAsync(flush, s & 0xff, flush_bytes, st), "flush");
    spin_kernel<<<1, 1, 0, st>>>(40000);  // ~20 us: the launches below queue behind it
    check_cuda(cudaEventRecord(outer0, st), "record");
    if (path == 0)
      work[w](st);
    else
      check_cuda(cudaGraphLaunch(path == 1 ? plain[w] : noded[w], st), "graph launch");
    check_cuda(cudaEventRecord(outer1, st), "record");
    check_cuda(cudaStreamSynchronize(st), "sample");
    if (s < kKinds * warmup) continue;
    us[w][k][path].push_back(1e3 * ms_between(outer0, outer1));
    if (path == 2) us[w][k][3].push_back(1e3 * ms_between(inner0, inner1));
  }
  // Each QuantVLA graph alone computes the forward: its replay into a poisoned output is checked.
  for (const cudaGraphExec_t g : {plain[1], noded[1]}) {
    if (const double err = p.graph_error(g, stream); !(err <= 1.0)) {
      std::printf("%s: a graph replay's output is wrong (%.3g x tolerance)\n", label.c_str(), err);
      return 1;
    }
  }
  const char* const path_names[4] = {"eager", "graph", "graph + nodes, outer events",
                                     "graph + nodes, inner events"};
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < 3; ++k)
      for (int q = 0; q < 4; ++q)
        print_row(
            label,
            (std::string(work_names[w]) + ", " + stream_names[k] + ", " + path_names[q]).c_str(),
            us[w][k][q]);
  return 0;
}
