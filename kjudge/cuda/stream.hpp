#pragma once
/** @file CUDA streams: an owned stream and a non-owning reference to any stream (including the
 *  legacy default stream, nullptr). */

#include <utility>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

/** Non-owning view of a stream; copying it never creates or destroys anything. */
class stream_ref {
 public:
  constexpr stream_ref() noexcept = default;  // the legacy default stream
  constexpr explicit stream_ref(cudaStream_t s) noexcept : m_stream(s) {}

  [[nodiscard]] constexpr cudaStream_t get() const noexcept { return m_stream; }
  /** Blocks the calling thread until all work queued on the stream so far has finished. */
  void synchronize() const { KJ_CUDA_CHECK(cudaStreamSynchronize(m_stream)); }

 private:
  cudaStream_t m_stream = nullptr;
};

/** Move-only owner of one cudaStream_t on the current device. */
class stream {
 public:
  /** Non-blocking by default: no implicit synchronisation with the legacy default stream. */
  explicit stream(unsigned flags = cudaStreamNonBlocking) {
    KJ_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, flags));
  }
  ~stream() {
    if (m_stream != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaStreamDestroy(m_stream));
  }
  stream(stream&& other) noexcept : m_stream(std::exchange(other.m_stream, nullptr)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      if (m_stream != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaStreamDestroy(m_stream));
      m_stream = std::exchange(other.m_stream, nullptr);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return m_stream; }
  [[nodiscard]] stream_ref ref() const noexcept { return stream_ref{m_stream}; }
  /** Blocks the calling thread until all work queued on the stream so far has finished. */
  void synchronize() const { KJ_CUDA_CHECK(cudaStreamSynchronize(m_stream)); }

 private:
  cudaStream_t m_stream = nullptr;
};

}  // namespace kj::cuda
