#include <kjudge/cuda/graph.hpp>

#include <exception>

namespace kj::cuda {

graph_exec graph_exec::capture(cudaStream_t stream, const std::function<void()>& issue,
                               std::string& why) noexcept {
  why.clear();
  try {
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      why = "cudaStreamBeginCapture: " + describe(e);
      return {};
    }
    std::string thrown;
    try {
      issue();
    } catch (const std::exception& ex) {
      thrown = ex.what();
    } catch (...) {
      thrown = "unknown exception";
    }
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream, &graph);
    std::size_t nodes = 0;
    graph_exec out;
    if (e == cudaSuccess && thrown.empty()) {
      e = cudaGraphGetNodes(graph, nullptr, &nodes);
      if (e == cudaSuccess && nodes > 0) e = cudaGraphInstantiate(&out.m_exec, graph, 0);
    }
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // what capture refused (a host synchronisation, ...), or the above
    if (!thrown.empty()) {
      why = "the forward failed under stream capture: " + thrown;
    } else if (e != cudaSuccess) {
      why = "stream capture failed: " + describe(e) +
            " (the forward waits for the host or calls a CUDA API that capture refuses)";
    } else if (nodes == 0) {
      why = "the forward issued no work on the timing stream";
    }
    if (!why.empty()) out.m_exec = nullptr;  // nothing was instantiated
    return out;
  } catch (...) {  // describe() allocates
    why = "stream capture failed";
    return {};
  }
}

}  // namespace kj::cuda
