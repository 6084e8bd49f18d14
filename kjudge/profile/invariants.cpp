#include <kjudge/profile/invariants.hpp>

#include <fmt/format.h>

#include <kjudge/profile/format.hpp>

namespace kj::profile {

namespace {

flag error_flag(const char* code, std::string message) {
  return {code, severity_error, std::move(message)};
}

}  // namespace

std::vector<flag> check_percentage(std::string_view what, double pct) {
  if (pct >= -percentage_slack_pct && pct <= 100.0 + percentage_slack_pct) return {};
  return {error_flag("percentage_out_of_range",
                     fmt::format("{} is {:.1f}%, outside [0, 100]: a share of a whole cannot be "
                                 "negative or exceed it (percentages added across kernels, or a "
                                 "ratio shown as a percentage)",
                                 what, pct))};
}

std::vector<flag> check_stall_shares(const std::map<std::string, double>& share_pct) {
  std::vector<flag> out;
  if (share_pct.empty()) return out;
  double sum = 0;
  for (const auto& [reason, pct] : share_pct) {
    sum += pct;
    for (auto& f : check_percentage(fmt::format("stall share of {}", reason), pct))
      out.push_back(std::move(f));
  }
  if (sum < 100.0 - stall_share_sum_tolerance_pct || sum > 100.0 + stall_share_sum_tolerance_pct)
    out.push_back(error_flag(
        "stall_shares_not_100",
        fmt::format("stall shares sum to {:.1f}%, not 100 +- {:.0f}: shares of stall cycles must "
                    "partition them (per-instruction ratios are not shares)",
                    sum, stall_share_sum_tolerance_pct)));
  return out;
}

std::vector<flag> check_sectors_per_request(std::string_view what, double sectors_per_request,
                                            double lowest) {
  if (sectors_per_request >= lowest && sectors_per_request <= max_sectors_per_request) return {};
  return {error_flag(
      "sectors_per_request_out_of_range",
      fmt::format("{} sectors per request is {:.2f}, outside [{:.0f}, {:.0f}]: a warp's request "
                  "touches {}at most 32 sectors (ratios added across kernels?)",
                  what, sectors_per_request, lowest, max_sectors_per_request,
                  lowest > 0 ? "at least 1 and " : ""))};
}

std::vector<flag> check_bandwidth(std::string_view level, double achieved_bytes_per_s,
                                  const bandwidth_ceiling& ceiling) {
  std::vector<flag> out;
  if (ceiling.datasheet_bytes_per_s > 0 && achieved_bytes_per_s > ceiling.datasheet_bytes_per_s)
    out.push_back(error_flag(
        "bandwidth_above_ceiling",
        fmt::format(
            "achieved {} bandwidth {} is above the datasheet peak {}: impossible; the bytes "
            "or the duration are wrong",
            level, format_bytes_per_s(achieved_bytes_per_s),
            format_bytes_per_s(ceiling.datasheet_bytes_per_s))));
  else if (ceiling.measured_bytes_per_s > 0 &&
           achieved_bytes_per_s > measured_ceiling_tolerance * ceiling.measured_bytes_per_s)
    out.push_back(error_flag(
        "bandwidth_above_ceiling",
        fmt::format("achieved {} bandwidth {} is above {:.2f} x the measured ceiling {}: the bytes "
                    "or the duration are wrong, or the ceiling was under-measured",
                    level, format_bytes_per_s(achieved_bytes_per_s), measured_ceiling_tolerance,
                    format_bytes_per_s(ceiling.measured_bytes_per_s))));
  if (achieved_bytes_per_s < 0)
    out.push_back(error_flag("bandwidth_negative",
                             fmt::format("achieved {} bandwidth is negative ({})", level,
                                         format_bytes_per_s(achieved_bytes_per_s))));
  return out;
}

std::vector<flag> check_bandwidth_ceiling(std::string_view level,
                                          const bandwidth_ceiling& ceiling) {
  if (ceiling.measured_bytes_per_s > 0 && ceiling.datasheet_bytes_per_s > 0 &&
      ceiling.measured_bytes_per_s > ceiling.datasheet_bytes_per_s)
    return {error_flag(
        "ceiling_above_datasheet",
        fmt::format("measured {} ceiling {} is above the datasheet peak {}: the microbenchmark "
                    "counts bytes it did not move or times too short a run",
                    level, format_bytes_per_s(ceiling.measured_bytes_per_s),
                    format_bytes_per_s(ceiling.datasheet_bytes_per_s)))};
  return {};
}

std::vector<flag> check_ceiling_order(const ceilings& c) {
  std::vector<flag> out;
  struct level {
    const char* name;
    double measured;
  };
  const level levels[] = {{"L1/shared", c.l1.measured_bytes_per_s},
                          {"L2", c.l2.measured_bytes_per_s},
                          {"DRAM", c.dram.measured_bytes_per_s}};
  for (std::size_t i = 0; i + 1 < std::size(levels); ++i) {
    const auto& near = levels[i];
    const auto& far = levels[i + 1];
    if (near.measured > 0 && far.measured > 0 && near.measured < far.measured)
      out.push_back(error_flag(
          "ceilings_out_of_order",
          fmt::format("measured {} ceiling {} is below the {} ceiling {}: a cache level is never "
                      "slower than the level behind it; a ceiling taken from one short launch "
                      "measures launch latency, not bandwidth (rule 19)",
                      near.name, format_bytes_per_s(near.measured), far.name,
                      format_bytes_per_s(far.measured))));
  }
  return out;
}

std::vector<flag> check_flop_rate(flop_type type, double achieved_flop_per_s,
                                  const compute_ceiling& ceiling) {
  if (ceiling.datasheet_dense_flop_per_s > 0) {
    if (achieved_flop_per_s > ceiling.datasheet_dense_flop_per_s)
      return {error_flag(
          "flops_above_peak",
          fmt::format("achieved {} rate {} is above its dense peak {}: the FLOP count or the "
                      "duration is wrong, or the work ran on another pipe",
                      to_string(type), format_flop_per_s(achieved_flop_per_s),
                      format_flop_per_s(ceiling.datasheet_dense_flop_per_s)))};
  } else if (ceiling.measured_flop_per_s > 0 &&
             achieved_flop_per_s > measured_ceiling_tolerance * ceiling.measured_flop_per_s) {
    return {error_flag(
        "flops_above_peak",
        fmt::format("achieved {} rate {} is above {:.2f} x the measured ceiling {}",
                    to_string(type), format_flop_per_s(achieved_flop_per_s),
                    measured_ceiling_tolerance, format_flop_per_s(ceiling.measured_flop_per_s)))};
  }
  return {};
}

std::vector<flag> check_compute_ceiling(flop_type type, const compute_ceiling& ceiling) {
  const double measured = ceiling.measured_flop_per_s;
  const double dense = ceiling.datasheet_dense_flop_per_s;
  if (measured <= 0 || dense <= 0) return {};
  if (measured > dense)
    return {error_flag(
        "ceiling_above_datasheet",
        fmt::format("measured {} rate {} is above the datasheet dense peak {}", to_string(type),
                    format_flop_per_s(measured), format_flop_per_s(dense)))};
  if (measured < sparse_suspect_fraction * dense)
    return {{"peak_maybe_sparse", severity_warning,
             fmt::format("measured {} rate {} is {:.0f}% of the peak {} given as dense: that peak "
                         "may be the 'with sparsity' figure (2x dense), or the microbenchmark is "
                         "weak",
                         to_string(type), format_flop_per_s(measured), 100.0 * measured / dense,
                         format_flop_per_s(dense))}};
  return {};
}

std::vector<flag> check_dense_peak(flop_type type, double used_peak_flop_per_s,
                                   double datasheet_dense_flop_per_s) {
  if (used_peak_flop_per_s <= 0 || datasheet_dense_flop_per_s <= 0) return {};
  if (used_peak_flop_per_s <= dense_peak_tolerance * datasheet_dense_flop_per_s) return {};
  return {error_flag(
      "sparse_peak",
      fmt::format("the {} peak in use, {}, is {:.2f} x the dense datasheet peak {}: it is the "
                  "'with sparsity' figure or a wrong one; roofs are dense peaks (rule 15)",
                  to_string(type), format_flop_per_s(used_peak_flop_per_s),
                  used_peak_flop_per_s / datasheet_dense_flop_per_s,
                  format_flop_per_s(datasheet_dense_flop_per_s)))};
}

std::vector<flag> check_ceilings(const ceilings& c) {
  std::vector<flag> out;
  auto append = [&out](std::vector<flag> more) {
    for (auto& f : more) out.push_back(std::move(f));
  };
  append(check_bandwidth_ceiling("L1/shared", c.l1));
  append(check_bandwidth_ceiling("L2", c.l2));
  append(check_bandwidth_ceiling("DRAM", c.dram));
  append(check_ceiling_order(c));
  for (auto t : all_flop_types) append(check_compute_ceiling(t, c.at(t)));
  return out;
}

std::vector<flag> check_peak_memory(std::uint64_t peak_bytes, std::uint64_t output_bytes,
                                    std::uint64_t device_memory_bytes) {
  std::vector<flag> out;
  if (peak_bytes < output_bytes)
    out.push_back(error_flag(
        "peak_memory_below_outputs",
        fmt::format("peak memory {} bytes is below the {} bytes of the outputs alone: the "
                    "baseline was not reset or allocations escaped the measurement",
                    peak_bytes, output_bytes)));
  if (device_memory_bytes > 0 && peak_bytes > device_memory_bytes)
    out.push_back(
        error_flag("peak_memory_above_device",
                   fmt::format("peak memory {} bytes is above the device's {} bytes: impossible",
                               peak_bytes, device_memory_bytes)));
  return out;
}

std::vector<flag> check_launches(bool cuda_candidate, std::uint64_t kernel_launches,
                                 std::uint64_t memcpy_count, std::uint64_t memset_count) {
  if (!cuda_candidate || kernel_launches > 0) return {};
  return {error_flag(
      "no_kernel_launched",
      fmt::format("the CUDA candidate launched no kernel ({} memcpy, {} memset records, which are "
                  "not kernels): it computed nothing on the GPU, or its kernels ran outside the "
                  "profiled region",
                  memcpy_count, memset_count))};
}

std::vector<flag> check_kernel_time(std::string_view kernel, nanoseconds duration) {
  if (duration.count() >= min_kernel_time_ns) return {};
  return {error_flag("impossible_kernel_time",
                     fmt::format("kernel {} took {:.3f} us on the device, under {:.1f} us, less "
                                 "than any kernel takes: the record or its unit is wrong",
                                 kernel, microseconds(duration).count(),
                                 microseconds(nanoseconds(min_kernel_time_ns)).count()))};
}

std::vector<flag> check_forward_time(std::string_view figure, nanoseconds time,
                                     std::uint64_t launches, bool eager) {
  std::vector<flag> out;
  if (time.count() <= 0) return out;
  const double floor_ns = static_cast<double>(launches) * min_time_per_launch_ns;
  if (eager && launches > 0 && time.count() < floor_ns)
    out.push_back(error_flag(
        "faster_than_launches",
        fmt::format("{} time {:.2f} us of an eager forward of {} kernel launches is under {:.1f} "
                    "us ({} x {:.1f} us per launch): the launches cannot have been issued that "
                    "fast; the figure or its unit is wrong",
                    figure, microseconds(time).count(), launches,
                    microseconds(nanoseconds(floor_ns)).count(), launches,
                    microseconds(nanoseconds(min_time_per_launch_ns)).count())));
  else if (time.count() < review_time_ns)
    out.push_back({"very_fast_forward", severity_info,
                   fmt::format("{} time {:.2f} us is under {:.0f} us: review", figure,
                               microseconds(time).count(),
                               microseconds(nanoseconds(review_time_ns)).count())});
  return out;
}

std::vector<flag> check_event_time(nanoseconds event_time, nanoseconds kernel_busy_time,
                                   nanoseconds host_wall, bool includes_host_waits) {
  std::vector<flag> out;
  if (event_time.count() > 0 && kernel_busy_time.count() > 0 &&
      event_time.count() < event_covers_kernels_fraction * kernel_busy_time.count())
    out.push_back(error_flag(
        kernels_outside_timed_region_code,
        fmt::format("event time {:.2f} us{} is under {:.1f} x the {:.2f} us its kernels ran: work "
                    "ran outside the timed stream or region (side streams escape the events)",
                    microseconds(event_time).count(),
                    includes_host_waits ? " (its waits for the host included)" : "",
                    event_covers_kernels_fraction, microseconds(kernel_busy_time).count())));
  if (event_time.count() > 0 && host_wall.count() > 0 && event_time > host_wall)
    out.push_back(error_flag(
        "event_exceeds_wall",
        fmt::format("event time {:.2f} us is above the host wall time {:.2f} us of the same call: "
                    "events and host clock disagree",
                    microseconds(event_time).count(), microseconds(host_wall).count())));
  return out;
}

}  // namespace kj::profile
