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
    (void)cudaGetLastError();  // errors of calls capture refused (a host synchronisation, ...)
    std::size_t nodes = 0;
    if (e == cudaSuccess && graph != nullptr && thrown.empty())
      e = cudaGraphGetNodes(graph, nullptr, &nodes);
    graph_exec out;
    if (e == cudaSuccess && graph != nullptr && thrown.empty() && nodes > 0)
      e = cudaGraphInstantiate(&out.m_exec, graph, 0);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (!thrown.empty()) {
      why = "the forward failed under stream capture: " + thrown;
      out.m_exec = nullptr;
    } else if (e != cudaSuccess) {
      why = "stream capture failed: " + describe(e) +
            " (the forward waits for the host or calls a CUDA API that capture refuses)";
      out.m_exec = nullptr;
    } else if (nodes == 0) {
      why = "the forward issued no work on the timing stream";
    }
    return out;
  } catch (...) {  // describe() allocates
    why = "stream capture failed";
    return {};
  }
}

}  // namespace kj::cuda
