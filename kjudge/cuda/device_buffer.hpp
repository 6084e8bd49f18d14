#pragma once
/** @file Owned device memory: untyped bytes from cudaMalloc on the current device. */

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

/** Move-only owner of `size()` bytes of device memory (contents undefined until written). */
class device_buffer {
 public:
  device_buffer() noexcept = default;
  /** Throws kj::error(cuda) when the allocation fails (cudaErrorMemoryAllocation included). */
  explicit device_buffer(std::size_t bytes) : m_size(bytes) {
    if (bytes > 0) KJ_CUDA_CHECK(cudaMalloc(&m_data, bytes));
  }
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& other) noexcept
      : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      m_data = std::exchange(other.m_data, nullptr);
      m_size = std::exchange(other.m_size, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  /** Device pointer; nullptr when empty. */
  [[nodiscard]] void* data() const noexcept { return m_data; }
  [[nodiscard]] std::size_t size() const noexcept { return m_size; }

  /** Enqueues a write of `value` to every byte on `stream`; returns before it runs. */
  void fill(unsigned char value, cudaStream_t stream) {
    if (m_size > 0) KJ_CUDA_CHECK(cudaMemsetAsync(m_data, value, m_size, stream));
  }

 private:
  void release() noexcept {
    // cudaFree synchronises the device; harmless here, buffers are freed outside timed regions.
    if (m_data != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaFree(m_data));
    m_data = nullptr;
    m_size = 0;
  }

  void* m_data = nullptr;
  std::size_t m_size = 0;
};

}  // namespace kj::cuda
