// agent_summary(): the compact profile an LLM agent reads between attempts. Every hint is printed
// only when the numbers it quotes meet its named threshold; stalls are shares of stall cycles.

#include <kjudge/profile/report.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/profile/format.hpp>
#include <kjudge/profile/unreported.hpp>

namespace kj::profile {

namespace {

using detail::format_ns;
using detail::metric_text;

/** A stall reason with at least this share of stall cycles gets its hint. */
constexpr double stall_hint_share_pct = 30.0;
/** Achieved occupancy under this fraction of the theoretical one: warps idle part of the time. */
constexpr double occupancy_gap_fraction = 0.8;
/** A grid under this many waves leaves SM slots empty for the whole kernel. */
constexpr double small_grid_waves = 1.0;
/** Sectors per warp-wide global load when 32 lanes read consecutive 4-byte words. */
constexpr double coalesced_sectors_per_request = 4.0;
/** ... and consecutive 16-byte vectors, the widest per-lane load: above this no width explains it.
 */
constexpr double coalesced_vector_sectors_per_request = 16.0;
/** Kernels and stall reasons listed per side. */
constexpr std::size_t summary_kernels = 3;
constexpr std::size_t summary_stalls = 3;

std::string signed_change(double from, double to) {
  if (from == 0) return "n/a";
  return fmt::format("{:+.1f}%", 100.0 * (to - from) / from);
}

std::string kernel_name(const kernel_metrics& k, std::size_t width = 56) {
  return detail::short_kernel_name(k.display_name(), width);
}

std::string stall_list(const derived_metrics& d) {
  const auto top = detail::top_stalls(d, summary_stalls);
  if (top.empty())  // "n/a", or the flag when the shares failed their check
    return metric_text(d.stall_share_pct, [](const auto&) { return std::string("n/a"); });
  std::string out;
  for (const auto& [reason, share] : top)
    out += fmt::format("{}{} {:.1f}%", out.empty() ? "" : ", ", reason, share);
  return out;
}

void side_lines(std::string& out, const side_profile& s) {
  const auto t = detail::forward_time(s);
  const auto n = detail::launch_count(s);
  out += fmt::format("{}: {}, {} kernel{} ({}), {}: {}\n", s.side,
                     t.ns > 0 ? fmt::format("{} ({})", format_ns(t.ns), t.what) : t.what, n.count,
                     n.count == 1 ? "" : "s", n.source, to_string(s.bound.bound), s.bound.reason);
  if (s.kernels.empty()) {
    if (s.cupti && !s.cupti->kernels.empty()) {
      const auto timed = detail::cupti_kernels_by_time(*s.cupti);
      out += "  top kernels (CUPTI durations; no counters):";
      for (std::size_t i = 0; i < std::min(summary_kernels, timed.size()); ++i)
        out += fmt::format(" {} {};", detail::short_kernel_name(timed[i]->name, 56),
                           format_ns(timed[i]->duration_ns));
      out += "\n";
    }
    return;
  }
  const auto order = detail::kernels_by_time(s);
  for (std::size_t i = 0; i < std::min(summary_kernels, order.size()); ++i) {
    const auto& k = s.kernels[order[i]];
    out += fmt::format(
        "  {}. {} {} ({}): SM SOL {}, memory SOL {}, occupancy {} achieved / {} theoretical, "
        "{}\n",
        i + 1, kernel_name(k.counters), metric_text(k.derived.duration_ns, format_ns),
        metric_text(detail::kernel_share_pct(k, s),
                    [](double v) { return fmt::format("{:.0f}% of kernel time", v); }),
        metric_text(k.derived.sm_sol_pct, format_pct),
        metric_text(k.derived.memory_sol_pct, format_pct),
        metric_text(k.derived.achieved_occupancy_pct, format_pct),
        metric_text(k.derived.theoretical_occupancy_pct, format_pct),
        to_string(k.derived.bound.bound));
  }
  if (s.total)
    out += fmt::format("  stalls (share of stall cycles): {}\n", stall_list(s.total->derived));
  const auto& top = s.kernels[order.front()];
  const std::string limiter = detail::occupancy_limiter(top.counters);
  out += fmt::format("  occupancy of {}: limited by {}; theoretical {}, achieved {}\n",
                     kernel_name(top.counters, 32),
                     limiter.empty() ? "n/a (limits not collected)" : limiter,
                     metric_text(top.derived.theoretical_occupancy_pct, format_pct),
                     metric_text(top.derived.achieved_occupancy_pct, format_pct));
}

/** Hints for one side (the candidate): each only when its condition holds, numbers quoted. */
std::vector<std::string> hints(const side_profile& s) {
  std::vector<std::string> out;
  if (s.bound.bound == bottleneck::launch_bound)
    out.push_back(fmt::format("launch-bound ({}): fuse kernels or replay a CUDA graph; {} launches",
                              s.bound.reason, detail::launch_count(s).count));
  if (!s.total || s.kernels.empty()) return out;
  const auto& d = s.total->derived;
  if (s.bound.bound == bottleneck::memory_bound)
    out.push_back(fmt::format(
        "memory-bound: DRAM at {} of its roof ({} moved, {}): reduce bytes moved (fuse passes, "
        "reuse data from shared memory, narrower dtypes)",
        metric_text(d.dram_throughput_pct, format_pct), dram_bytes_text(s.total->counters),
        metric_text(d.dram_bytes_per_s, format_bytes_per_s)));
  // Which type dominates is known only when ncu reported every FLOP counter: one it left out
  // (read as 0) may be the tensor work that dominates.
  if (s.bound.bound == bottleneck::compute_bound &&
      all_reported(s.total->counters, all_flop_metrics())) {
    const flop_type dominant = dominant_flop_type(s.total->counters.flops);
    if (!is_tensor(dominant))
      out.push_back(fmt::format(
          "compute-bound on {} CUDA cores ({} of that roof) with no dominant tensor work: tensor "
          "cores (TF32/BF16 MMA) if the tolerance allows",
          to_string(dominant), metric_text(d.flop_pct(dominant), format_pct)));
  }
  const auto stalls = detail::top_stalls(d, 1);
  if (!stalls.empty() && stalls.front().second >= stall_hint_share_pct) {
    const auto& [reason, share] = stalls.front();
    if (reason == "long_scoreboard")
      out.push_back(fmt::format(
          "long_scoreboard is {:.1f}% of stall cycles: warps wait on global-memory loads; keep "
          "more bytes in flight (vector loads, several independent loads per thread, prefetch)",
          share));
    else if (reason == "barrier")
      out.push_back(fmt::format(
          "barrier is {:.1f}% of stall cycles: warps wait at __syncthreads; balance work across "
          "warps or synchronise less often",
          share));
    else if (reason == "short_scoreboard" || reason == "mio_throttle")
      out.push_back(fmt::format(
          "{} is {:.1f}% of stall cycles: shared-memory / special-function pressure; fewer "
          "shared-memory round trips, avoid bank conflicts",
          reason, share));
  }
  if (d.achieved_occupancy_pct.ok() && d.theoretical_occupancy_pct.ok() &&
      d.achieved_occupancy_pct.value() <
          occupancy_gap_fraction * d.theoretical_occupancy_pct.value())
    out.push_back(fmt::format(
        "achieved occupancy {} is under {:.0f}% of the theoretical {}: warps are resident only "
        "part of the time (tail effect or load imbalance across blocks)",
        format_pct(d.achieved_occupancy_pct.value()), 100.0 * occupancy_gap_fraction,
        format_pct(d.theoretical_occupancy_pct.value())));
  const auto& top = s.kernels[detail::kernels_by_time(s).front()].counters;
  if (top.waves_per_sm > 0 && top.waves_per_sm < small_grid_waves)
    out.push_back(fmt::format(
        "{}: grid of {} blocks fills {:.2f} waves of {} SMs: SM slots stay empty; more blocks "
        "(less work each) or more work per launch",
        kernel_name(top, 32), top.grid.count(), top.waves_per_sm, top.sm_count));
  // The counters do not say how wide each lane's load was: above 16 sectors per request no
  // width explains it; between 4 and 16 it is coalesced only if the lanes load vectors.
  if (d.global_load_sectors_per_request.ok()) {
    const double spr = d.global_load_sectors_per_request.value();
    if (spr > coalesced_vector_sectors_per_request)
      out.push_back(fmt::format(
          "global loads touch {:.2f} sectors per request (>{:.0f}, more than even 16-byte vector "
          "loads need): uncoalesced access; make a warp's lanes read consecutive addresses",
          spr, coalesced_vector_sectors_per_request));
    else if (spr > coalesced_sectors_per_request)
      out.push_back(fmt::format(
          "global loads touch {:.2f} sectors per request: coalesced only if each lane loads "
          "{:.0f} bytes (vector loads); for 4-byte loads that is uncoalesced access (4 sectors "
          "when a warp's lanes read consecutive words)",
          spr, spr));  // a warp-wide request of s sectors moves 32 s bytes: s bytes per lane
  }
  const auto limit_below = [&top](std::uint32_t limit) {
    for (auto other : {top.occupancy_limit_warps, top.occupancy_limit_blocks})
      if (other > 0 && limit >= other) return false;
    return limit > 0;
  };
  if (limit_below(top.occupancy_limit_registers) &&
      top.occupancy_limit_registers <= top.occupancy_limit_shared_mem)
    out.push_back(fmt::format(
        "{}: registers limit occupancy to {} blocks/SM ({} regs/thread; the block size allows "
        "{}): __launch_bounds__ or fewer live values per thread",
        kernel_name(top, 32), top.occupancy_limit_registers, top.registers_per_thread,
        top.occupancy_limit_warps));
  if (limit_below(top.occupancy_limit_shared_mem) &&
      top.occupancy_limit_shared_mem < top.occupancy_limit_registers)
    out.push_back(fmt::format("{}: shared memory limits occupancy to {} blocks/SM ({} per block)",
                              kernel_name(top, 32), top.occupancy_limit_shared_mem,
                              format_bytes(top.shared_mem_per_block_bytes)));
  return out;
}

std::string top_stall_name(const side_profile& s) {
  if (!s.total) return "n/a";
  const auto top = detail::top_stalls(s.total->derived, 1);
  if (top.empty()) return "n/a";
  return fmt::format("{} {:.1f}%", top.front().first, top.front().second);
}

/** DRAM bytes are compared only when both totals have both DRAM byte counters (a sum that lacks
 *  one is no figure to compare). */
void delta_lines(std::string& out, const side_profile& now, const side_profile& before) {
  const bool dram_bytes_known = now.total && before.total &&
                                all_reported(now.total->counters, dram_byte_metrics) &&
                                all_reported(before.total->counters, dram_byte_metrics);
  const auto t1 = detail::forward_time(now), t0 = detail::forward_time(before);
  if (t0.ns > 0 && t1.ns > 0)
    out += fmt::format("  candidate {} {} → {} ({}){}\n", t1.what, format_ns(t0.ns),
                       format_ns(t1.ns), signed_change(t0.ns, t1.ns),
                       t0.what == t1.what ? "" : fmt::format(" [baseline: {}]", t0.what));
  const auto n1 = detail::launch_count(now), n0 = detail::launch_count(before);
  out += fmt::format("  candidate kernels {} → {} ({}){}\n", n0.count, n1.count,
                     signed_change(static_cast<double>(n0.count), static_cast<double>(n1.count)),
                     std::string_view(n0.source) == n1.source
                         ? ""
                         : fmt::format(" [counted by {}, baseline by {}]", n1.source, n0.source));
  if (dram_bytes_known) {
    const double b0 = before.total->counters.dram_bytes(), b1 = now.total->counters.dram_bytes();
    out += fmt::format("  candidate DRAM bytes {} → {} ({})\n", format_bytes(b0), format_bytes(b1),
                       signed_change(b0, b1));
  }
  out += before.bound.bound == now.bound.bound
             ? fmt::format("  bound unchanged: {}\n", to_string(now.bound.bound))
             : fmt::format("  bound {} → {}\n", to_string(before.bound.bound),
                           to_string(now.bound.bound));
  out += fmt::format("  top stall (share of stall cycles) {} → {}\n", top_stall_name(before),
                     top_stall_name(now));
}

void flag_lines(std::string& out, const profile_report& r) {
  std::vector<std::pair<std::string, const flag*>> errors, warnings;
  auto take = [&](const char* scope, const std::vector<flag>& flags) {
    for (const auto& f : flags) {
      if (f.severity == severity_error) errors.emplace_back(scope, &f);
      if (f.severity == severity_warning) warnings.emplace_back(scope, &f);
    }
  };
  take("report", r.flags);
  take("reference", r.reference.flags);
  take("candidate", r.candidate_side.flags);
  if (errors.empty() && warnings.empty()) return;
  out += fmt::format("flags: {} error(s), {} warning(s) (figures they touch are not shown)\n",
                     errors.size(), warnings.size());
  for (const auto& [scope, f] : errors)
    out += fmt::format("  error [{}] {}: {}\n", scope, f->code, f->message);
  std::vector<std::string> codes;  // each warning code once, in order
  for (const auto& [scope, f] : warnings)
    if (std::find(codes.begin(), codes.end(), f->code) == codes.end()) codes.push_back(f->code);
  if (!codes.empty()) out += fmt::format("  warnings: {}\n", fmt::join(codes, ", "));
}

}  // namespace

std::string agent_summary(const profile_report& r, const profile_report* baseline) {
  std::string out;
  out += fmt::format(
      "profile {} on {}; counters: {}\n", r.problem, r.gpu.empty() ? "unknown GPU" : r.gpu,
      r.counters.collected ? fmt::format("{} (clock control {}, cache control {})", r.counters.tool,
                                         r.counters.clock_control, r.counters.cache_control)
                           : fmt::format("not collected ({})", r.counters.unavailable_reason));
  side_lines(out, r.reference);
  side_lines(out, r.candidate_side);
  const auto launches = detail::fusion_counts(r.reference, r.candidate_side);
  out += fmt::format("fusion ratio (reference / candidate launches, {}): {} ({} / {})\n",
                     launches.source,
                     metric_text(r.fusion_ratio, [](double v) { return fmt::format("{:.2f}", v); }),
                     launches.reference, launches.candidate);
  const auto h = hints(r.candidate_side);
  if (!h.empty()) {
    out += "hints (candidate):\n";
    for (const auto& line : h) out += "  - " + line + "\n";
  }
  if (baseline) {
    out += "vs baseline:\n";
    delta_lines(out, r.candidate_side, baseline->candidate_side);
  }
  flag_lines(out, r);
  return out;
}

}  // namespace kj::profile
