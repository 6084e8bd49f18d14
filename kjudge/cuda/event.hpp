#pragma once
/** @file Owned CUDA event. Events are recorded on a stream and complete when the GPU reaches them
 *  in that stream's order; the time between two completed events is GPU time. */

#include <utility>

#include <cuda_runtime_api.h>

#include <kjudge/core/units.hpp>
#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

/** Move-only owner of one cudaEvent_t, created on the current device. */
class event {
 public:
  /** Timing-enabled by default (cudaEventDefault); throws kj::error(cuda) on failure. */
  explicit event(unsigned flags = cudaEventDefault) {
    KJ_CUDA_CHECK(cudaEventCreateWithFlags(&m_event, flags));
  }
  ~event() {
    if (m_event != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaEventDestroy(m_event));
  }
  event(event&& other) noexcept : m_event(std::exchange(other.m_event, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      if (m_event != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaEventDestroy(m_event));
      m_event = std::exchange(other.m_event, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return m_event; }

  /** Enqueues the event on `stream`; returns at once. */
  void record(cudaStream_t stream) { KJ_CUDA_CHECK(cudaEventRecord(m_event, stream)); }
  /** Blocks the calling thread until the event has completed on the GPU. */
  void synchronize() const { KJ_CUDA_CHECK(cudaEventSynchronize(m_event)); }

 private:
  cudaEvent_t m_event = nullptr;
};

/** GPU time from `start` to `end`, both recorded and completed (resolution about 0.5 us). */
[[nodiscard]] inline milliseconds elapsed(const event& start, const event& end) {
  float ms = 0.0f;
  KJ_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return milliseconds{static_cast<double>(ms)};
}

}  // namespace kj::cuda
