#pragma once
/** @file Owned CUDA graph executable, made by capturing the work a callable issues on a stream. */

#include <functional>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

/** Move-only owner of one cudaGraphExec_t; empty (false) when capture failed. */
class graph_exec {
 public:
  graph_exec() noexcept = default;
  ~graph_exec() {
    if (m_exec != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(m_exec));
  }
  graph_exec(graph_exec&& other) noexcept : m_exec(std::exchange(other.m_exec, nullptr)) {}
  graph_exec& operator=(graph_exec&& other) noexcept {
    if (this != &other) {
      if (m_exec != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(m_exec));
      m_exec = std::exchange(other.m_exec, nullptr);
    }
    return *this;
  }
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;

  /** Captures what `issue` enqueues on `stream` (thread-local capture mode: CUDA calls of other
   *  threads are not restricted) and instantiates it. On failure returns an empty graph_exec and
   *  sets `why` (the CUDA error, what `issue` threw, or that it issued nothing); the stream is out
   *  of capture mode and no CUDA error is left pending either way. Never throws. */
  [[nodiscard]] static graph_exec capture(cudaStream_t stream, const std::function<void()>& issue,
                                          std::string& why) noexcept;

  /** Enqueues one replay on `stream`; throws kj::error(cuda) on failure. */
  void launch(cudaStream_t stream) const { KJ_CUDA_CHECK(cudaGraphLaunch(m_exec, stream)); }

  explicit operator bool() const noexcept { return m_exec != nullptr; }

 private:
  cudaGraphExec_t m_exec = nullptr;
};

}  // namespace kj::cuda
