#include <kjudge/eval/forward_record.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <kjudge/cuda/check.hpp>
#include <kjudge/cuda/event.hpp>
#include <kjudge/measure/stream_blocker.hpp>

namespace kj::eval {

namespace {

std::optional<std::uint64_t> device_free_bytes() {
  std::size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return std::nullopt;
  return free_bytes;
}

}  // namespace

void drop_blocking_kernel(profile::activity_records& records) {
  auto& kernels = records.kernels;
  const auto is_blocker = [](const profile::kernel_record& k) {
    const std::string& n = k.display_name();
    return n.find("kj::measure::detail::") != std::string::npos &&
           n.find("blocking_kernel") != std::string::npos;
  };
  // kjudge's launch is the recording's first: the lowest correlation id (CUPTI numbers API calls
  // in issue order), or the earliest start where CUPTI gave no ids. A candidate's kernel of the
  // same name comes later and stays counted.
  const auto first = [](const profile::kernel_record& a, const profile::kernel_record& b) {
    return a.correlation_id != b.correlation_id ? a.correlation_id < b.correlation_id
                                                : a.start_ns < b.start_ns;
  };
  auto ours = kernels.end();
  for (auto it = kernels.begin(); it != kernels.end(); ++it)
    if (is_blocker(*it) && (ours == kernels.end() || first(*it, *ours))) ours = it;
  if (ours != kernels.end()) kernels.erase(ours);
}

std::vector<profile::timed_kernel> timed_kernels(const profile::activity_records& records) {
  std::vector<const profile::kernel_record*> order;
  for (const auto& k : records.kernels) order.push_back(&k);
  // Records arrive in delivery order; launch order is start order (untimed ones last).
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return (a->timed() ? a->start_ns : UINT64_MAX) < (b->timed() ? b->start_ns : UINT64_MAX);
  });
  std::vector<profile::timed_kernel> out;
  for (const auto* k : order)
    out.push_back({k->display_name(), k->duration().count(), k->grid, k->block, k->stream_id});
  return out;
}

std::optional<profile::cupti_forward> record_forward(measure::target& t, const forward_context& ctx,
                                                     profile::activity_collector& collector,
                                                     std::string& why) {
  if (!collector.available()) {
    why = collector.unavailable_reason();
    return std::nullopt;
  }
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  t.prepare(0);
  if (ctx.flusher != nullptr) ctx.flusher->flush(stream);
  KJ_CUDA_CHECK(cudaDeviceSynchronize());

  // A first launch under an active collector pays for CUPTI's instrumentation of each kernel
  // (about 2 ms on the H200), which would land inside the events: one unrecorded region first.
  if (!collector.start()) {
    why = collector.unavailable_reason();
    return std::nullopt;
  }
  t.run();
  (void)collector.stop();
  t.prepare(0);
  if (ctx.flusher != nullptr) ctx.flusher->flush(stream);
  KJ_CUDA_CHECK(cudaDeviceSynchronize());

  cuda::event start, end;
  measure::detail::stream_blocker blocker;
  profile::memory_sample mem;
  const auto before = ctx.session->allocator_stats(true);
  mem.allocator_baseline_bytes = before.allocated;
  mem.device_free_before_bytes = device_free_bytes();
  mem.output_bytes = ctx.output_bytes;
  mem.device_memory_bytes = ctx.device_memory_bytes;

  // The forward is queued behind kjudge's blocking kernel, as in the device figure, so the events
  // measure the device's work rather than the host's launches (slowed by CUPTI's callbacks); a
  // forward that waits for the host makes the blocking kernel give up, and the event time then
  // holds the host's waits as well: not a device time (the result leaves it out), but still an
  // upper bound of the timed stream's work, so kernels on a stream it never waited for, running
  // past the end event, are still caught.
  // The collector starts first (enabling it must not wait on a held stream); the blocking
  // kernel's own record is dropped below.
  if (!collector.start()) {
    why = collector.unavailable_reason();
    return std::nullopt;
  }
  const auto cupti_stream = collector.stream_id(static_cast<CUstream_st*>(ctx.stream));
  blocker.hold(stream, forward_block_timeout);
  // The host's clock from before the start event is issued to after the device is synchronised:
  // the events lie inside it, so an event time above it means the clocks disagree (invariant 2's
  // upper bound, a bound that holds easily: it includes issuing and CUPTI's flush).
  const auto wall_start = std::chrono::steady_clock::now();
  {
    measure::detail::release_on_exit release(blocker);
    start.record(stream);
    t.run();
    end.record(stream);
  }
  const bool complete = collector.stop();  // synchronises the device
  const auto wall = std::chrono::steady_clock::now() - wall_start;
  mem.device_free_after_bytes = device_free_bytes();
  const auto after = ctx.session->allocator_stats(false);
  mem.allocator_peak_bytes = after.peak_allocated;
  // 0 ever allocated: no such statistic (inputs and weights are allocated before any forward).
  if (after.allocated_ever > 0 && after.allocated_ever >= before.allocated_ever)
    mem.allocator_allocated_bytes = after.allocated_ever - before.allocated_ever;
  mem.allocator_reserved_growth_bytes =
      after.reserved > before.reserved ? after.reserved - before.reserved : 0;

  profile::cupti_forward f;
  const bool host_sync = blocker.timed_out();
  const nanoseconds event_span = cuda::elapsed(start, end);
  f.event_time_ns = host_sync ? 0.0 : event_span.count();
  profile::activity_records records = collector.records();
  drop_blocking_kernel(records);
  f.kernels = timed_kernels(records);
  profile::timed_forward timing;
  timing.cuda_candidate = ctx.cuda_side;
  timing.event_time = event_span;
  timing.event_includes_host_waits = host_sync;
  timing.host_wall = std::chrono::duration_cast<nanoseconds>(wall);
  timing.timed_stream = cupti_stream;
  f.launches = profile::checked_launches(records, timing);
  if (!complete)
    f.launches = profile::add_flag(
        f.launches, {"cupti_incomplete", "warning",
                     "CUPTI's records may be incomplete: " + collector.unavailable_reason()});
  if (host_sync)
    f.launches = profile::add_flag(
        f.launches, {"event_time_not_measured", "info",
                     "the forward waited for the host while queued, so the events around it "
                     "time the host's waits too: not a device time, and compared with the "
                     "kernels only for work they missed"});
  f.memory = profile::measure_peak_memory(mem);
  return f;
}

}  // namespace kj::eval
