#include <kjudge/measure/stream_blocker.hpp>

#include <atomic>

#include <kjudge/measure/blocking_kernel.hpp>

namespace kj::measure::detail {

stream_blocker::stream_blocker() : m_flags(2 * sizeof(int)) {}

void stream_blocker::hold(cudaStream_t stream, milliseconds timeout) {
  // No kernel reads the flags now (the previous one finished before its stream sync), so plain
  // stores are safe; the seq_cst stores also order them before the launch below.
  std::atomic_ref<int>(host_words()[0]).store(0);
  std::atomic_ref<int>(host_words()[1]).store(0);
  const auto timeout_ns = static_cast<std::uint64_t>(nanoseconds(timeout).count());
  auto* device_words = static_cast<int*>(m_flags.device_data());
  launch_blocking_kernel(device_words, device_words + 1, timeout_ns, stream);
}

void stream_blocker::release() noexcept {
  std::atomic_ref<int>(host_words()[0]).store(1);
}

bool stream_blocker::timed_out() const noexcept {
  return std::atomic_ref<int>(host_words()[1]).load() != 0;
}

}  // namespace kj::measure::detail
