// What a gpu_work_watch (kjudge/profile/gpu_work_watch.hpp: a CUPTI callback subscriber, live
// while the problem and candidate are imported) leaves behind once stopped: the host's cost to
// enqueue an empty kernel and the device's time for back-to-back empty kernels, measured in one
// process before and after a watch came and went ("watch": it detaches CUPTI when it stops), a
// bare CUPTI subscriber came and went without detaching ("cupti": one callback enabled, fired,
// unsubscribed), or nothing ("none": the drift between the two measurements by themselves).
// Twenty rounds of each measurement; medians. On the GPU, after kjudge's build, from the
// repository root:
//   bash bench/gpu_work_watch/run.sh   # builds this, then runs both modes three times each
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include <cuda_runtime.h>
#include <cupti.h>

#include <kjudge/profile/gpu_work_watch.hpp>

namespace {

__global__ void empty_kernel() {}

constexpr int launches = 2000;
constexpr int rounds = 20;

#define CHECK(call)                                                   \
  do {                                                                \
    const cudaError_t e = (call);                                     \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct cost {
  double host_ns;    ///< per launch, to enqueue
  double device_ns;  ///< per launch, events around the back-to-back kernels
};

cost measure(cudaStream_t s) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> host, device;
  for (int r = 0; r < rounds; ++r) {
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaEventRecord(a, s));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32, 0, s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    host.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / launches);
    device.push_back(ms * 1e6 / launches);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return {median(host), median(device)};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "watch";
  if (mode != "watch" && mode != "cupti" && mode != "none") {
    std::fprintf(stderr, "usage: %s watch|cupti|none\n", argv[0]);
    return 2;
  }
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static_cast<void>(measure(s));  // warm-up: module loading, clocks
  const cost before = measure(s);
  std::string fired;
  if (mode == "watch") {
    kj::profile::gpu_work_watch w([&](std::string_view api) { fired = api; });
    if (!w.unavailable_reason().empty()) {
      std::fprintf(stderr, "watch unavailable: %s\n", w.unavailable_reason().c_str());
      return 1;
    }
    empty_kernel<<<1, 32, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    w.stop();
    if (!w.detach_error().empty()) fired += " (not detached: " + w.detach_error() + ")";
  } else if (mode == "cupti") {
    CUpti_SubscriberHandle sub = nullptr;
    const auto on_call = [](void* user, CUpti_CallbackDomain, CUpti_CallbackId, const void* d) {
      const auto* cb = static_cast<const CUpti_CallbackData*>(d);
      if (cb->callbackSite == CUPTI_API_ENTER) *static_cast<std::string*>(user) = cb->functionName;
    };
    if (cuptiSubscribe(&sub, on_call, &fired) != CUPTI_SUCCESS ||
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "cuptiSubscribe or cuptiEnableCallback failed\n");
      return 1;
    }
    empty_kernel<<<1, 32, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    cuptiEnableAllDomains(0, sub);
    cuptiUnsubscribe(sub);
  }
  const cost after = measure(s);
  std::printf(
      "%-5s host %.1f -> %.1f ns a launch (%+.1f%%), device %.1f -> %.1f ns (%+.1f%%)%s%s\n",
      mode.data(), before.host_ns, after.host_ns, 100 * (after.host_ns / before.host_ns - 1),
      before.device_ns, after.device_ns, 100 * (after.device_ns / before.device_ns - 1),
      fired.empty() ? "" : "; fired by ", fired.c_str());
  return mode != "none" && fired.empty() ? 1 : 0;
}
