#pragma once
/** @file Owned page-locked host memory, mapped into the device address space, so the host and a
 *  running kernel can exchange words (flags) without a copy. */

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

/** Move-only owner of `size()` bytes from cudaHostAlloc(cudaHostAllocMapped), zero-filled. A
 *  kernel reads and writes it through device_data(); each access crosses the bus, so it suits
 *  flags, not bulk data. Writes from either side are visible to the other without a copy, but
 *  ordering needs volatile/atomic accesses (and a completed kernel or a sync for device writes). */
class pinned_buffer {
 public:
  pinned_buffer() noexcept = default;
  explicit pinned_buffer(std::size_t bytes) : m_size(bytes) {
    if (bytes == 0) return;
    KJ_CUDA_CHECK(cudaHostAlloc(&m_host, bytes, cudaHostAllocMapped));
    try {
      KJ_CUDA_CHECK(cudaHostGetDevicePointer(&m_device, m_host, 0));
    } catch (...) {
      release();
      throw;
    }
    auto* bytes_ptr = static_cast<unsigned char*>(m_host);
    for (std::size_t i = 0; i < bytes; ++i) bytes_ptr[i] = 0;
  }
  ~pinned_buffer() { release(); }
  pinned_buffer(pinned_buffer&& other) noexcept
      : m_host(std::exchange(other.m_host, nullptr)),
        m_device(std::exchange(other.m_device, nullptr)),
        m_size(std::exchange(other.m_size, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& other) noexcept {
    if (this != &other) {
      release();
      m_host = std::exchange(other.m_host, nullptr);
      m_device = std::exchange(other.m_device, nullptr);
      m_size = std::exchange(other.m_size, 0);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  /** Host pointer (for the CPU). */
  [[nodiscard]] void* data() const noexcept { return m_host; }
  /** The same memory as seen from the device (for kernels). */
  [[nodiscard]] void* device_data() const noexcept { return m_device; }
  [[nodiscard]] std::size_t size() const noexcept { return m_size; }

 private:
  void release() noexcept {
    if (m_host != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaFreeHost(m_host));
    m_host = nullptr;
    m_device = nullptr;
    m_size = 0;
  }

  void* m_host = nullptr;
  void* m_device = nullptr;
  std::size_t m_size = 0;
};

}  // namespace kj::cuda
