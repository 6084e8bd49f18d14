#pragma once
/** @file Host side of the blocking kernel: the mapped flags and the hold / release protocol. */

#include <cstdint>

#include <cuda_runtime_api.h>

#include <kjudge/core/units.hpp>
#include <kjudge/cuda/pinned_buffer.hpp>

namespace kj::measure::detail {

/** Holds a stream with the blocking kernel. Protocol, one at a time: hold(), issue work, release(),
 *  synchronise the stream, then read timed_out(). Not thread-safe. */
class stream_blocker {
 public:
  /** Allocates the two mapped flag words; throws kj::error(cuda). */
  stream_blocker();

  /** Resets the flags and enqueues the blocking kernel on `stream`. Precondition: the previous
   *  hold (if any) has been released and its stream synchronised. */
  void hold(cudaStream_t stream, milliseconds timeout);
  /** Lets the kernel finish (a host store to mapped memory); never throws. */
  void release() noexcept;
  /** Whether the last kernel gave up waiting. Valid only after its stream was synchronised. */
  [[nodiscard]] bool timed_out() const noexcept;

 private:
  [[nodiscard]] int* host_words() const noexcept { return static_cast<int*>(m_flags.data()); }
  cuda::pinned_buffer m_flags;  ///< word 0: release, word 1: timed_out
};

/** Releases a held blocker when the scope ends, also when the forward throws. */
class release_on_exit {
 public:
  explicit release_on_exit(stream_blocker& b) noexcept : m_blocker(b) {}
  ~release_on_exit() { m_blocker.release(); }
  release_on_exit(const release_on_exit&) = delete;
  release_on_exit& operator=(const release_on_exit&) = delete;

 private:
  stream_blocker& m_blocker;
};

}  // namespace kj::measure::detail
