// Does a graph replay read slower than the kernel's own launch, after an L2 flush, because the
// graph's launch data (its kernel nodes' parameters, written to device memory when the graph was
// uploaded) was flushed with everything else, where an eager launch writes its parameters fresh?
// One cold sample as kjudge takes it (twice the L2 written, synchronised, a spin kernel holding
// the legacy stream while start event, forward and end event are issued), eight input sets, a
// graph per set captured on a stream of its own; the kinds rotate sample by sample:
//   eager:             the kernel's own launch (kj_forward);
//   graph:             the set's graph replayed;
//   graph, params set: the same, after cudaGraphExecKernelNodeSetParams wrote every kernel node's
//                      parameters again (the same values) once the flush was done;
//   graph, uploaded:   the same, after cudaGraphUpload of the graph once the flush was done;
//   graph, warm graph: the same, after the graph of another set replayed once after the flush
//                      (the launch data of all graphs shares nothing, so this warms only what
//                      replays share: the GPU's own state, not this graph's data).
// If "params set" or "uploaded" reads as eager and "graph" above it, the excess is the graph's
// flushed launch data. Prints medians and quartiles; the outputs of every graph are checked
// against the CPU reference after the samples (and after params were set again).
// Usage: graph_params [samples per kind, default 300] [flush MiB, default twice the L2].
#include <cuda_runtime.h>

#include "bench_common.cuh"
#include "qv_instance.cuh"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace qv_bench;

/** A set's graph and, from the captured graph, its kernel nodes with their parameters. */
struct set_graph {
  cudaGraphExec_t exec = nullptr;
  std::vector<cudaGraphNode_t> kernels;
  std::vector<cudaKernelNodeParams> params;
  cudaGraph_t graph = nullptr;  // kept: the nodes belong to it
};

set_graph capture(instance& p, cudaStream_t stream) {
  set_graph g;
  void* const before = p.call.stream;
  p.call.stream = stream;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  p.forward();
  check_cuda(cudaStreamEndCapture(stream, &g.graph), "end capture");
  p.call.stream = before;
  check_cuda(cudaGraphInstantiate(&g.exec, g.graph, 0), "instantiate");
  check_cuda(cudaGraphUpload(g.exec, stream), "upload");
  size_t n = 0;
  check_cuda(cudaGraphGetNodes(g.graph, nullptr, &n), "node count");
  std::vector<cudaGraphNode_t> nodes(n);
  check_cuda(cudaGraphGetNodes(g.graph, nodes.data(), &n), "nodes");
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    check_cuda(cudaGraphNodeGetType(node, &type), "node type");
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams kp{};
    check_cuda(cudaGraphKernelNodeGetParams(node, &kp), "kernel params");
    g.kernels.push_back(node);
    g.params.push_back(kp);
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::max(10, std::atoi(argv[1])) : 300;
  const int warmup = 20;
  constexpr int kSets = 8;
  const cudaStream_t timing = cudaStreamLegacy;
  cudaStream_t capture_stream;
  check_cuda(cudaStreamCreate(&capture_stream), "stream");

  std::vector<std::unique_ptr<instance>> sets;
  std::vector<set_graph> graphs;
  for (int s = 0; s < kSets; ++s) {
    sets.push_back(std::make_unique<instance>(8, 64, 128, 2000 + s));
    sets.back()->call.stream = timing;
    if (const double w = sets.back()->worst_error(); !(w <= 1.0)) {
      std::printf("graph_params: the forward is wrong on set %d (%.3g x tolerance)\n", s, w);
      return 1;
    }
  }
  for (int s = 0; s < kSets; ++s) graphs.push_back(capture(*sets[s], capture_stream));
  check_cuda(cudaStreamSynchronize(capture_stream), "uploads");
  std::printf("graph_params: %zu kernel node(s) in each graph\n", graphs[0].kernels.size());

  const size_t flush_bytes = flush_size(argc > 2 ? std::max(1, std::atoi(argv[2])) : 0);
  void* flush = nullptr;
  check_cuda(cudaMalloc(&flush, flush_bytes), "cudaMalloc flush");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");

  enum kind { kEager, kGraph, kParamsSet, kUploaded, kWarmGraph, kKinds };
  const char* const names[kKinds] = {"eager", "graph", "graph, params set after the flush",
                                     "graph, uploaded after the flush",
                                     "graph, another graph replayed after the flush"};
  std::vector<std::vector<double>> us(kKinds);
  std::vector<int> drawn(kKinds, 0);
  for (int s = 0; s < kKinds * (samples + warmup); ++s) {
    const int k = s % kKinds;
    const int set = drawn[k]++ % kSets;
    set_graph& g = graphs[set];
    check_cuda(cudaMemsetAsync(flush, s & 0xff, flush_bytes, timing), "flush");
    check_cuda(cudaStreamSynchronize(timing), "flush");
    if (k == kParamsSet) {
      for (size_t i = 0; i < g.kernels.size(); ++i)
        check_cuda(cudaGraphExecKernelNodeSetParams(g.exec, g.kernels[i], &g.params[i]),
                   "set params");
    } else if (k == kUploaded) {
      check_cuda(cudaGraphUpload(g.exec, timing), "upload");
      check_cuda(cudaStreamSynchronize(timing), "upload");
    } else if (k == kWarmGraph) {
      check_cuda(cudaGraphLaunch(graphs[(set + 1) % kSets].exec, timing), "other graph");
      check_cuda(cudaStreamSynchronize(timing), "other graph");
    }
    spin_kernel<<<1, 1, 0, timing>>>(40000);  // ~20 us: the launches below queue behind it
    check_cuda(cudaEventRecord(start, timing), "record");
    if (k == kEager)
      sets[set]->forward();
    else
      check_cuda(cudaGraphLaunch(g.exec, timing), "graph launch");
    check_cuda(cudaEventRecord(stop, timing), "record");
    check_cuda(cudaStreamSynchronize(timing), "sample");
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    if (s >= kKinds * warmup) us[k].push_back(1e3 * ms);
  }
  std::printf("graph_params: %zu MiB flushed before each sample, %d samples a kind\n",
              flush_bytes >> 20, samples);
  for (int k = 0; k < kKinds; ++k)
    std::printf("graph_params: %-46s %6.2f us (q1 %.2f, q3 %.2f, min %.2f)\n", names[k],
                quantile(us[k], 0.5), quantile(us[k], 0.25), quantile(us[k], 0.75),
                quantile(us[k], 0.0));
  // The kernels' inputs were never changed: every graph must still compute its set's forward.
  for (int s = 0; s < kSets; ++s) {
    const double w = sets[s]->graph_error(graphs[s].exec, timing);
    if (!(w <= 1.0)) {
      std::printf("graph_params: set %d's graph replay is wrong (%.3g x tolerance)\n", s, w);
      return 1;
    }
  }
  std::printf("graph_params: every graph's output checked\n");
  return 0;
}
