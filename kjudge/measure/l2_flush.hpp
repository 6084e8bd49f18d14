#pragma once
/** @file Cold-cache preparation: evicts the L2 by writing a buffer twice its size. */

#include <cstddef>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/device_buffer.hpp>

namespace kj::measure::detail {

/** Owns a device buffer of 2 x L2 bytes. flush() enqueues a memset of the whole buffer with a
 *  byte value that changes every call (so no write is a no-op); the caller synchronises. */
class l2_flusher {
 public:
  /** Allocates 2 * l2_bytes on the current device; throws kj::error(cuda). */
  explicit l2_flusher(std::size_t l2_bytes) : m_buffer(2 * l2_bytes) {}

  /** Enqueues the eviction on `stream`; asynchronous. */
  void flush(cudaStream_t stream) {
    m_value = static_cast<unsigned char>(m_value % 255 + 1);  // cycles through 1..255
    m_buffer.fill(m_value, stream);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return m_buffer.size(); }

 private:
  cuda::device_buffer m_buffer;
  unsigned char m_value = 0;
};

}  // namespace kj::measure::detail
