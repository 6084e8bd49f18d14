#pragma once
/** @file Runs a function once, before the first call of this process that queues work on a GPU
 *  (a kernel launch, a copy, a fill, a graph launch, a prefetch: CUDA runtime or driver API,
 *  from any thread), while the watch lives. The worker takes the GPU's lock so at the first GPU
 *  work of a problem's or candidate's import, and so lets an import that only builds (load_inline,
 *  nvcc, Triton) run beside another evaluation's timing while one that uses the GPU waits for it
 *  (docs/methodology.md, "One evaluation at a time on a GPU").
 *
 *  Built on CUPTI's callback API, which takes one subscriber a process: under Nsight Compute,
 *  Nsight Systems, compute-sanitizer or another CUPTI client the watch is unavailable and says
 *  why, as it is in a build without CUPTI. Only the matching calls' callbacks are enabled (their
 *  exits are ignored). The function runs on the calling thread, inside the CUDA call, before the
 *  call does anything; other threads' matching calls wait until it has returned. It must not call
 * CUDA or this watch, and what it throws is dropped (nothing may leave a CUPTI callback). */

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace kj::profile {

/** Whether a CUDA runtime or driver API function of this name (CUPTI's name for its callback
 *  id: "cudaLaunchKernel_v7000", "cuMemcpyHtoDAsync_v2") queues work on a device: the launch,
 *  copy, fill, graph launch and upload, prefetch, stream memory-operation and external-semaphore
 *  signal families; not allocation, events, queries or synchronisation. */
[[nodiscard]] bool queues_gpu_work(std::string_view api_name) noexcept;

class gpu_work_watch {
 public:
  using handler = std::function<void(std::string_view api_name)>;

  /** Starts watching; `on_first` gets the name of the first matching call. */
  explicit gpu_work_watch(handler on_first);
  ~gpu_work_watch();
  gpu_work_watch(const gpu_work_watch&) = delete;
  gpu_work_watch& operator=(const gpu_work_watch&) = delete;

  /** Stops watching (idempotent); waits for a handler that is running to return. Then detaches
   *  CUPTI from the process (detach_cupti, at the exit of a cudaGetDevice of this thread), since
   *  a subscriber that came and went leaves a cost on every later CUDA call; detach_error()
   *  says when that failed. True when this call stopped a watch that was subscribed (the first
   *  stop of one that started). */
  bool stop();
  /** Why stop() could not detach CUPTI; empty when it did, or before stop(). */
  [[nodiscard]] const std::string& detach_error() const noexcept { return m_detach_error; }
  /** Whether the watch is on (started, not stopped). */
  [[nodiscard]] bool active() const;
  /** Why the watch could not start; empty when it did. */
  [[nodiscard]] const std::string& unavailable_reason() const noexcept { return m_reason; }
  /** The first matching call's name; empty while none came. */
  [[nodiscard]] std::string fired_by() const;

  /** The callback's work (public for the C callback that CUPTI calls): a matching call's entry;
   *  the exit of stop()'s own call, where CUPTI is detached. */
  void on_call(const char* api_name);
  void on_detach_call();

 private:
  handler m_on_first;
  std::string m_reason;
  std::string m_detach_error;
  mutable std::mutex m_mutex;       ///< held while the handler runs
  std::atomic<bool> m_done{false};  ///< the handler returned, or stopped (set under m_mutex)
  bool m_fired = false;             ///< under m_mutex
  std::atomic<bool> m_detach_pending{false};
  std::string m_fired_by;  ///< under m_mutex
  void* m_subscriber = nullptr;
};

}  // namespace kj::profile
