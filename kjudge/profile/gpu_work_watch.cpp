#include <kjudge/profile/gpu_work_watch.hpp>

#include <array>
#include <utility>

#include <fmt/format.h>

#include <kjudge/config.hpp>
#include <kjudge/profile/cupti_activity.hpp>

#if KJ_HAVE_CUPTI
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif

namespace kj::profile {

bool queues_gpu_work(std::string_view name) noexcept {
  // CUPTI's names for its callback ids carry a version suffix ("cudaLaunchKernel_v7000",
  // "cuMemcpyHtoDAsync_v2"): the families are prefixes. nvcc 13 compiles <<<>>> to a call of
  // __cudaLaunchKernel.
  static constexpr std::array<std::string_view, 23> families = {"cudaLaunch",
                                                                "__cudaLaunch",
                                                                "cudaMemcpy",
                                                                "cudaMemset",
                                                                "cudaGraphLaunch",
                                                                "cudaGraphUpload",
                                                                "cudaMemPrefetch",
                                                                "cudaMemDiscardAndPrefetch",
                                                                "cudaSignalExternalSemaphores",
                                                                "cuLaunch",
                                                                "cuMemcpy",
                                                                "cuMemset",
                                                                "cuGraphLaunch",
                                                                "cuGraphUpload",
                                                                "cuMemPrefetch",
                                                                "cuMemDiscardAndPrefetch",
                                                                "cuMemBatchDecompress",
                                                                "cuStreamWriteValue",
                                                                "cuStreamBatchMemOp",
                                                                "cuSignalExternalSemaphores",
                                                                "cuStreamWaitValue",
                                                                "cudaStreamWaitValue",
                                                                "cudaStreamWriteValue"};
  for (const auto family : families)
    if (name.substr(0, family.size()) == family) return true;
  return false;
}

namespace {

#if KJ_HAVE_CUPTI
std::string describe(CUptiResult r) {
  return cupti_result_text(static_cast<int>(r));
}

// The call stop() makes to detach CUPTI at its exit (gpu_work_watch::on_detach_call).
constexpr CUpti_CallbackId detach_call = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;

void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb == nullptr) return;
  auto* watch = static_cast<gpu_work_watch*>(userdata);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == detach_call) {
    if (cb->callbackSite == CUPTI_API_EXIT) watch->on_detach_call();
    return;
  }
  if (cb->callbackSite == CUPTI_API_ENTER) watch->on_call(cb->functionName);
}
#endif

}  // namespace

gpu_work_watch::gpu_work_watch(handler on_first) : m_on_first(std::move(on_first)) {
#if KJ_HAVE_CUPTI
  CUpti_SubscriberHandle sub = nullptr;
  std::array<char, 128> other{};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "kjudge GPU lock";
  params.oldSubscriberName = other.data();
  params.oldSubscriberSize = other.size();
  const CUptiResult r = cuptiSubscribe_v2(&sub, on_callback, this, &params);
  if (r != CUPTI_SUCCESS) {
    m_reason = fmt::format("cuptiSubscribe failed: {}{}", describe(r),
                           other[0] != '\0' ? fmt::format(" (held by {})", other.data()) : "");
    m_done = true;
    return;
  }
  m_subscriber = sub;
  std::size_t enabled = 0;
  const std::array<std::pair<CUpti_CallbackDomain, std::uint32_t>, 2> domains = {
      std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
      std::pair{CUPTI_CB_DOMAIN_DRIVER_API, std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}};
  for (const auto& [domain, size] : domains)
    for (std::uint32_t id = 1; id < size; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr ||
          !queues_gpu_work(name))
        continue;
      if (const CUptiResult e = cuptiEnableCallback(1, sub, domain, id); e != CUPTI_SUCCESS) {
        m_reason = fmt::format("cuptiEnableCallback({}) failed: {}", name, describe(e));
        stop();
        return;
      }
      ++enabled;
    }
  if (enabled == 0) {
    m_reason = "CUPTI names no launch, copy or fill call to watch";
    stop();
  }
#else
  m_reason = "CUPTI not available in this build";
  m_done = true;
#endif
}

gpu_work_watch::~gpu_work_watch() {
  stop();
}

void gpu_work_watch::on_call(const char* api_name) {
  if (m_done.load(std::memory_order_acquire)) return;
  // Until the handler has returned, every other matching call waits here: the first call's
  // handler may wait for something (the GPU's lock) that no GPU work may pass.
  const std::lock_guard lock(m_mutex);
  if (m_fired || m_done.load(std::memory_order_relaxed)) return;
  m_fired = true;
  m_fired_by = api_name != nullptr ? api_name : "?";
  try {
    m_on_first(m_fired_by);
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing may leave a CUPTI callback
  }
  m_done.store(true, std::memory_order_release);
}

void gpu_work_watch::on_detach_call() {
  if (m_detach_pending.exchange(false)) m_detach_error = detach_cupti();
}

bool gpu_work_watch::stop() {
  {
    const std::lock_guard lock(m_mutex);  // a running handler returns first
    m_done.store(true, std::memory_order_release);
  }
#if KJ_HAVE_CUPTI
  if (m_subscriber == nullptr) return false;
  auto* sub = static_cast<CUpti_SubscriberHandle>(m_subscriber);
  m_subscriber = nullptr;
  static_cast<void>(cuptiEnableAllDomains(0, sub));
  // CUPTI is detached at the exit of a CUDA call (CUPTI's advice for cuptiFinalize: no call of
  // this thread is then inside the driver); detaching removes the subscriber too.
  m_detach_pending = true;
  if (cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, detach_call) == CUPTI_SUCCESS) {
    int device = 0;
    static_cast<void>(cudaGetDevice(&device));
  }
  if (m_detach_pending.exchange(false)) {  // the call did not detach it: as it can, here
    static_cast<void>(cuptiEnableAllDomains(0, sub));
    static_cast<void>(cuptiUnsubscribe(sub));
    m_detach_error = detach_cupti();
  }
  return true;
#else
  return false;
#endif
}

bool gpu_work_watch::active() const {
  return m_subscriber != nullptr && !m_done.load(std::memory_order_acquire);
}

std::string gpu_work_watch::fired_by() const {
  const std::lock_guard lock(m_mutex);
  return m_fired_by;
}

}  // namespace kj::profile
