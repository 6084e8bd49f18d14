#include <kjudge/profile/launch_summary.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/profile/invariants.hpp>

namespace kj::profile {

nanoseconds interval_union(std::vector<std::pair<std::uint64_t, std::uint64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  std::uint64_t total = 0;
  bool open = false;
  std::uint64_t cur_start = 0, cur_end = 0;
  for (const auto& [start, end] : iv) {
    if (end <= start) continue;  // empty or untimed
    if (open && start <= cur_end) {
      cur_end = std::max(cur_end, end);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = start;
    cur_end = end;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return nanoseconds(static_cast<double>(total));
}

launch_summary summarize_launches(const activity_records& records) {
  launch_summary s;
  s.kernel_launches = records.kernels.size();
  s.dropped_records = records.dropped;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
  intervals.reserve(records.kernels.size());
  std::uint64_t first = 0, last = 0;
  for (const auto& k : records.kernels) {
    s.kernel_streams.insert(k.stream_id);
    if (!k.timed()) {
      ++s.untimed_kernels;
      continue;
    }
    s.kernel_time_sum += k.duration();
    intervals.emplace_back(k.start_ns, k.end_ns);
    first = intervals.size() == 1 ? k.start_ns : std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  s.kernel_busy_time = interval_union(std::move(intervals));
  if (last > first) s.kernel_span = nanoseconds(static_cast<double>(last - first));
  for (const auto& m : records.memory_ops) {
    s.memory_op_streams.insert(m.stream_id);
    s.memory_op_time_sum += m.duration();
    if (m.op == memory_op::memcpy) {
      ++s.memcpy_count;
      s.memcpy_bytes += m.bytes;
    } else {
      ++s.memset_count;
      s.memset_bytes += m.bytes;
    }
  }
  return s;
}

namespace {

std::set<std::uint32_t> without(const std::set<std::uint32_t>& s, std::uint32_t id) {
  std::set<std::uint32_t> out = s;
  out.erase(id);
  return out;
}

}  // namespace

std::vector<flag> check_launch_summary(const activity_records& records,
                                       const launch_summary& summary, const timed_forward& timing) {
  std::vector<flag> out;
  if (summary.dropped_records > 0)
    out.push_back({"cupti_records_dropped", severity_error,
                   fmt::format("CUPTI dropped {} activity records (no buffer space): launch "
                               "counts and device times of this forward are incomplete",
                               summary.dropped_records)});

  // Invariant 11.
  append(out, check_launches(timing.cuda_candidate, summary.kernel_launches, summary.memcpy_count,
                             summary.memset_count));

  // Rule 10: all work on the timed stream.
  if (timing.timed_stream) {
    const auto other_kernel = without(summary.kernel_streams, *timing.timed_stream);
    const auto other_memory = without(summary.memory_op_streams, *timing.timed_stream);
    if (!other_kernel.empty() || !other_memory.empty()) {
      std::uint64_t kernels_elsewhere = 0;
      for (const auto& k : records.kernels)
        if (k.stream_id != *timing.timed_stream) ++kernels_elsewhere;
      std::uint64_t ops_elsewhere = 0;
      for (const auto& m : records.memory_ops)
        if (m.stream_id != *timing.timed_stream) ++ops_elsewhere;
      out.push_back(
          {"work_outside_timed_stream", severity_warning,
           fmt::format("{} of {} kernels (streams {}) and {} of {} memcpy/memset (streams {}) "
                       "ran outside the timed stream {}: the event time covers them only if "
                       "those streams were joined back into it",
                       kernels_elsewhere, records.kernels.size(), other_kernel, ops_elsewhere,
                       records.memory_ops.size(), other_memory, *timing.timed_stream)});
    }
  }

  // Invariant 1.
  for (const auto& k : records.kernels) {
    if (!k.timed()) continue;
    append(out, check_kernel_time(k.display_name(), k.duration()));
  }
  if (summary.untimed_kernels > 0)
    out.push_back({"kernel_untimed", severity_info,
                   fmt::format("{} kernel records carry no timestamps (CUPTI lacked device "
                               "memory); they count as launches but not in the device times",
                               summary.untimed_kernels)});
  if (!timing.event_includes_host_waits)
    append(out,
           check_forward_time("event", timing.event_time, summary.kernel_launches, timing.eager));

  // Invariant 2, against the union: overlapping kernels took their union in wall-clock time.
  append(out, check_event_time(timing.event_time, summary.kernel_busy_time, timing.host_wall,
                               timing.event_includes_host_waits));
  return out;
}

checked<launch_summary> checked_launches(const activity_records& records,
                                         const timed_forward& timing) {
  launch_summary s = summarize_launches(records);
  std::vector<flag> flags = check_launch_summary(records, s, timing);
  return make_checked(std::move(s), std::move(flags));
}

checked<double> fusion_ratio(std::uint64_t reference_launches, std::uint64_t candidate_launches) {
  if (candidate_launches == 0)
    return checked<double>::missing("the candidate launched no kernel: no fusion ratio");
  if (reference_launches == 0)
    return checked<double>::missing("the reference launched no kernel: no fusion ratio");
  return checked<double>::pass(static_cast<double>(reference_launches) /
                               static_cast<double>(candidate_launches));
}

checked<double> fusion_ratio(const checked<launch_summary>& reference,
                             const checked<launch_summary>& candidate) {
  if (!reference.ok() || !candidate.ok())
    return checked<double>::missing(
        "a side's launch records failed their check (see its launches): no fusion ratio");
  return fusion_ratio(reference.value().kernel_launches, candidate.value().kernel_launches);
}

checked<peak_memory> measure_peak_memory(const memory_sample& s) {
  const bool have_allocator = s.allocator_baseline_bytes && s.allocator_peak_bytes;
  const bool have_device = s.device_free_before_bytes && s.device_free_after_bytes;
  if (!have_allocator && !have_device)
    return checked<peak_memory>::missing(
        "neither allocator statistics nor device free memory were measured");

  std::vector<flag> flags;
  peak_memory p;
  if (have_allocator) {
    if (*s.allocator_peak_bytes < *s.allocator_baseline_bytes)
      return checked<peak_memory>::fail(
          {"allocator_peak_below_baseline", severity_error,
           fmt::format("allocator peak {} bytes is below its baseline {} bytes: the peak was not "
                       "reset before the forward, or the figures come from different devices",
                       *s.allocator_peak_bytes, *s.allocator_baseline_bytes)});
    p.allocator_bytes = *s.allocator_peak_bytes - *s.allocator_baseline_bytes;
  }
  if (have_device) {
    // Free memory that grew (memory released) is no allocation: clamp at 0.
    const std::uint64_t drop = *s.device_free_before_bytes > *s.device_free_after_bytes
                                   ? *s.device_free_before_bytes - *s.device_free_after_bytes
                                   : 0;
    const std::uint64_t explained = have_allocator ? s.allocator_reserved_growth_bytes : 0;
    p.raw_bytes = drop > explained ? drop - explained : 0;
  }
  p.bytes = p.allocator_bytes + p.raw_bytes;
  if (!have_allocator)
    flags.push_back({"peak_memory_device_only", severity_info,
                     "no allocator statistics: peak memory is the device free-memory drop alone"});
  // Outputs the forward did not allocate (it wrote into a buffer it keeps, or returned a view of
  // an input) are not in its peak: the lower bound does not hold then.
  std::uint64_t outputs = s.output_bytes;
  if (s.allocator_allocated_bytes && p.raw_bytes == 0 && *s.allocator_allocated_bytes < outputs) {
    flags.push_back(
        {"outputs_not_allocated_by_forward", severity_info,
         fmt::format("the forward allocated {} bytes, fewer than its outputs' {}: they were not "
                     "all made by this forward (a buffer it keeps, a view of an input), so its "
                     "peak need not hold them",
                     *s.allocator_allocated_bytes, s.output_bytes)});
    outputs = 0;
  }
  append(flags, check_peak_memory(p.bytes, outputs, s.device_memory_bytes));
  return make_checked(p, std::move(flags));
}

}  // namespace kj::profile
