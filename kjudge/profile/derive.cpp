#include <kjudge/profile/derive.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <kjudge/profile/aggregate.hpp>
#include <kjudge/profile/invariants.hpp>

namespace kj::profile {

namespace {

using metric = checked<double>;

/** A percentage of a whole, checked against [0, 100]; missing when the whole is 0. */
metric percentage(std::string_view what, double part, double whole) {
  if (whole <= 0) return metric::missing(fmt::format("{}: no data (denominator 0)", what));
  return check_metric(100.0 * part / whole, [what](double v) { return check_percentage(what, v); });
}

/** A cache hit rate, 100 x hit sectors / sectors. ncu collects the two counters in different
 *  replay passes, and other clients of the cache count in both: for a short kernel they can
 *  disagree so that the hits exceed the sectors a little (ncu's own lts__t_sector_hit_rate.pct is
 *  the same ratio and reads the same). Up to hit_rate_noise_pct that is a collection inaccuracy
 *  of the counters, not a figure of the kernel: no number, and a warning
 *  (`hit_counters_inconsistent`) with the counts. Beyond it, or below 0, the counters are broken
 *  (a wrong column, a unit or parse error): invariant 3's error. */
metric hit_rate(std::string_view what, double hit_sectors, double sectors) {
  const double pct = sectors > 0 ? 100.0 * hit_sectors / sectors : 0.0;
  if (pct > 100.0 + percentage_slack_pct && pct <= hit_rate_noise_pct)
    return metric::fail(
        {"hit_counters_inconsistent", severity_warning,
         fmt::format("{}: ncu counted {:.0f} hit sectors against {:.0f} sectors ({:.1f}%): the "
                     "counters come from different replay passes and disagree (a short kernel, or "
                     "other clients of the cache); no hit rate",
                     what, hit_sectors, sectors, pct)});
  return percentage(what, hit_sectors, sectors);
}

/** `rate` as % of `roof`; the rate's own failure travels on; missing without a roof. A roof
 *  that is a measured ceiling (`measured`: no datasheet figure), which a rate may pass by its
 *  tolerance (invariant 6), reads 100% up to that tolerance: the rate is at the ceiling, within
 *  what measuring the ceiling can tell (the rate itself keeps its value). */
metric throughput_pct(std::string_view what, const metric& rate, double roof, bool measured) {
  if (!rate.ok()) return rate;
  if (roof <= 0) return metric::missing(fmt::format("{}: no roof to compare with", what));
  double pct = 100.0 * rate.value() / roof;
  if (measured && pct > 100.0 && pct <= 100.0 * measured_ceiling_tolerance) pct = 100.0;
  return check_metric(pct, [what](double v) { return check_percentage(what, v); });
}

metric bandwidth(std::string_view level, double bytes, double duration_ns,
                 const bandwidth_ceiling& ceiling) {
  if (duration_ns <= 0)
    return metric::missing(fmt::format("{} bandwidth: no kernel duration", level));
  return check_metric(bytes / (duration_ns * 1e-9),
                      [level, &ceiling](double v) { return check_bandwidth(level, v, ceiling); });
}

/** The largest of several throughputs. Any failed by an error: that failure. None available:
 *  missing. */
metric largest(std::string_view what, const std::vector<const metric*>& parts) {
  const metric* best = nullptr;
  for (const auto* p : parts) {
    if (!p->ok()) {
      if (!p->is_missing()) return *p;
      continue;
    }
    if (!best || p->value() > best->value()) best = p;
  }
  if (!best) return metric::missing(fmt::format("{}: no throughput available", what));
  return metric::pass(best->value());
}

metric optional_pct(std::string_view what, const std::optional<double>& v) {
  if (!v) return metric::missing(fmt::format("{}: not collected", what));
  return check_metric(*v, [what](double x) { return check_percentage(what, x); });
}

}  // namespace

std::string_view to_string(bottleneck b) noexcept {
  switch (b) {
    case bottleneck::compute_bound:
      return "compute-bound";
    case bottleneck::memory_bound:
      return "memory-bound";
    case bottleneck::latency_bound:
      return "latency-bound";
    case bottleneck::launch_bound:
      return "launch-bound";
    case bottleneck::unknown:
      return "unknown";
  }
  return "unknown";
}

bottleneck classify(double compute_throughput_pct, double memory_throughput_pct) noexcept {
  const bool compute = compute_throughput_pct >= bound_threshold_pct;
  const bool memory = memory_throughput_pct >= bound_threshold_pct;
  if (compute && memory)
    return compute_throughput_pct > memory_throughput_pct ? bottleneck::compute_bound
                                                          : bottleneck::memory_bound;
  if (compute) return bottleneck::compute_bound;
  if (memory) return bottleneck::memory_bound;
  return bottleneck::latency_bound;
}

classification classify(const checked<double>& compute_throughput_pct,
                        const checked<double>& memory_throughput_pct) {
  const auto& c = compute_throughput_pct;
  const auto& m = memory_throughput_pct;
  for (const auto* p : {&c, &m})
    if (!p->ok() && !p->is_missing())
      return {bottleneck::unknown,
              fmt::format("a throughput failed its check: {}", p->failure().message)};
  if (c.ok() && m.ok()) {
    const auto b = classify(c.value(), m.value());
    if (b == bottleneck::latency_bound)
      return {b, fmt::format("compute {:.1f}% and memory {:.1f}% of their roofs, both under "
                             "{:.0f}%: neither unit is busy, warps wait on latency",
                             c.value(), m.value(), bound_threshold_pct)};
    return {b,
            fmt::format("{} {:.1f}% of its roof (>= {:.0f}%); {} {:.1f}%",
                        b == bottleneck::compute_bound ? "compute" : "memory",
                        b == bottleneck::compute_bound ? c.value() : m.value(), bound_threshold_pct,
                        b == bottleneck::compute_bound ? "memory" : "compute",
                        b == bottleneck::compute_bound ? m.value() : c.value())};
  }
  // One side missing: only a throughput that reaches the threshold by itself decides.
  if (c.ok() && c.value() >= bound_threshold_pct)
    return {bottleneck::compute_bound,
            fmt::format("compute {:.1f}% of its roof (>= {:.0f}%); memory throughput unknown",
                        c.value(), bound_threshold_pct)};
  if (m.ok() && m.value() >= bound_threshold_pct)
    return {bottleneck::memory_bound,
            fmt::format("memory {:.1f}% of its roof (>= {:.0f}%); compute throughput unknown",
                        m.value(), bound_threshold_pct)};
  return {bottleneck::unknown, fmt::format("{} throughput unknown and the other under {:.0f}%",
                                           c.ok() ? "memory" : "compute", bound_threshold_pct)};
}

bool launch_gaps_dominate(nanoseconds kernel_time_sum, nanoseconds forward_device_time) noexcept {
  if (forward_device_time.count() <= 0) return false;
  return kernel_time_sum.count() < launch_bound_busy_fraction * forward_device_time.count();
}

void withhold_timed(derived_metrics& d, const checked<double>& broken) {
  d.duration_ns = broken;
  for (metric* m : {&d.dram_bytes_per_s, &d.l2_bytes_per_s, &d.l1_bytes_per_s,
                    &d.dram_throughput_pct, &d.l2_throughput_pct, &d.l1_throughput_pct,
                    &d.memory_throughput_pct, &d.compute_throughput_pct})
    *m = broken;
  for (auto& m : d.flop_per_s) m = broken;
  for (auto& m : d.flop_throughput_pct) m = broken;
  d.bound = {bottleneck::unknown,
             fmt::format("no class from a broken time: {}", broken.failure().message)};
}

derived_metrics derive(const kernel_metrics& k, const ceilings& c) {
  derived_metrics d;
  const double t = k.duration_ns;
  d.duration_ns =
      t > 0 ? check_metric(
                  t, [&k](double v) { return check_kernel_time(k.display_name(), nanoseconds(v)); })
            : metric::missing("no kernel duration");
  d.dram_bytes_per_s = bandwidth("DRAM", k.dram_bytes(), t, c.dram);
  d.l2_bytes_per_s = bandwidth("L2", k.l2_sectors * sector_bytes, t, c.l2);
  d.l1_bytes_per_s = bandwidth("L1/shared", k.l1_sectors * sector_bytes, t, c.l1);
  d.l1_hit_rate_pct = hit_rate("L1 hit rate", k.l1_hit_sectors, k.l1_sectors);
  d.l2_hit_rate_pct = hit_rate("L2 hit rate", k.l2_hit_sectors, k.l2_sectors);

  auto per_request = [](std::string_view what, double sectors, double requests, double lowest) {
    if (requests <= 0)
      return metric::missing(fmt::format("{} sectors per request: no requests", what));
    return check_metric(sectors / requests, [what, lowest](double v) {
      return check_sectors_per_request(what, v, lowest);
    });
  };
  d.global_load_sectors_per_request = per_request("global load", k.global_load_sectors,
                                                  k.global_load_requests, min_sectors_per_request);
  d.global_store_sectors_per_request =
      per_request("global store", k.global_store_sectors, k.global_store_requests, 0.0);

  d.achieved_occupancy_pct =
      percentage("achieved occupancy", k.warps_active,
                 k.sm_active_cycles * static_cast<double>(k.max_warps_per_sm));
  d.theoretical_occupancy_pct = optional_pct("theoretical occupancy", k.theoretical_occupancy_pct);
  d.sm_busy_pct =
      percentage("SM busy", k.sm_active_cycles, k.elapsed_cycles * static_cast<double>(k.sm_count));

  for (auto type : all_flop_types) {
    const auto i = static_cast<std::size_t>(type);
    const auto& ceiling = c.at(type);
    if (t <= 0) {
      d.flop_per_s[i] = metric::missing(fmt::format("{} FLOP/s: no duration", to_string(type)));
    } else {
      d.flop_per_s[i] = check_metric(flop(k.flops, type) / (t * 1e-9), [type, &ceiling](double v) {
        return check_flop_rate(type, v, ceiling);
      });
    }
    d.flop_throughput_pct[i] =
        throughput_pct(fmt::format("{} throughput", to_string(type)), d.flop_per_s[i],
                       ceiling.roof(), ceiling.datasheet_dense_flop_per_s <= 0);
  }
  const double dram = k.dram_bytes();
  const double all_flop = total_flop(k.flops);
  d.arithmetic_intensity_flop_per_byte =
      dram <= 0       ? metric::missing("arithmetic intensity: no DRAM bytes")
      : all_flop <= 0 ? metric::missing("arithmetic intensity: no FLOP counted")
                      : metric::pass(all_flop / dram);

  const auto level_pct = [](std::string_view what, const metric& rate,
                            const bandwidth_ceiling& ceiling) {
    return throughput_pct(what, rate, ceiling.roof(), ceiling.datasheet_bytes_per_s <= 0);
  };
  d.dram_throughput_pct = level_pct("DRAM throughput", d.dram_bytes_per_s, c.dram);
  d.l2_throughput_pct = level_pct("L2 throughput", d.l2_bytes_per_s, c.l2);
  d.l1_throughput_pct = level_pct("L1/shared throughput", d.l1_bytes_per_s, c.l1);
  d.memory_sol_pct = optional_pct("memory SOL", k.memory_throughput_pct);
  d.sm_sol_pct = optional_pct("SM SOL", k.sm_throughput_pct);
  d.memory_throughput_pct = largest(
      "memory throughput",
      {&d.dram_throughput_pct, &d.l2_throughput_pct, &d.l1_throughput_pct, &d.memory_sol_pct});
  // A type without a roof is missing and left out; a type that failed its check fails the whole.
  std::vector<const metric*> compute_parts{&d.sm_sol_pct};
  for (const auto& p : d.flop_throughput_pct) compute_parts.push_back(&p);
  d.compute_throughput_pct = largest("compute throughput", compute_parts);

  const auto stalls = break_down_stalls(k);
  if (stalls.total_stall_cycles > 0)
    d.stall_share_pct = check_metric(stalls.share_pct,
                                     [](const auto& shares) { return check_stall_shares(shares); });
  else
    d.stall_share_pct = checked<std::map<std::string, double>>::missing("no stall cycles recorded");
  if (stalls.instructions_issued > 0)
    d.stall_cycles_per_issued_instruction =
        checked<std::map<std::string, double>>::pass(stalls.cycles_per_issued_instruction);
  else
    d.stall_cycles_per_issued_instruction =
        checked<std::map<std::string, double>>::missing("no issued instructions recorded");

  d.bound = classify(d.compute_throughput_pct, d.memory_throughput_pct);
  if (!d.duration_ns.ok() && !d.duration_ns.is_missing()) withhold_timed(d, d.duration_ns);
  return d;
}

std::vector<flag> derived_metrics::flags() const {
  std::vector<flag> out;
  auto take = [&out](const std::vector<flag>& fs) {
    for (const auto& f : fs)
      if (f.code != no_data_code) append_unique(out, {f});
  };
  for (const auto* m : {&duration_ns, &dram_bytes_per_s, &l2_bytes_per_s, &l1_bytes_per_s,
                        &l1_hit_rate_pct, &l2_hit_rate_pct, &global_load_sectors_per_request,
                        &global_store_sectors_per_request, &achieved_occupancy_pct,
                        &theoretical_occupancy_pct, &sm_busy_pct, &sm_sol_pct, &memory_sol_pct})
    take(m->flags());
  for (const auto& m : flop_per_s) take(m.flags());
  take(arithmetic_intensity_flop_per_byte.flags());
  for (const auto* m : {&dram_throughput_pct, &l2_throughput_pct, &l1_throughput_pct})
    take(m->flags());
  for (const auto& m : flop_throughput_pct) take(m.flags());
  take(memory_throughput_pct.flags());
  take(compute_throughput_pct.flags());
  take(stall_share_pct.flags());
  take(stall_cycles_per_issued_instruction.flags());
  return out;
}

classification classify_forward(nanoseconds kernel_time_sum, nanoseconds forward_device_time,
                                const classification& kernels_bound) {
  if (!launch_gaps_dominate(kernel_time_sum, forward_device_time)) return kernels_bound;
  const double busy_ns = kernel_time_sum.count(), device_ns = forward_device_time.count();
  return {bottleneck::launch_bound,
          fmt::format("kernels ran {:.2f} us of the forward's {:.2f} us device time ({:.0f}%, "
                      "under {:.0f}%): launch gaps dominate",
                      busy_ns / 1e3, device_ns / 1e3, 100.0 * busy_ns / device_ns,
                      100.0 * launch_bound_busy_fraction)};
}

}  // namespace kj::profile
