// The terminal form of a profile (render_report) and the text pieces it shares with the agent
// summary. A failed metric is printed as "FAILED <code>" (its message is in the flags section) and
// a metric without data as "n/a": never a number.

#include <kjudge/profile/report.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/profile/format.hpp>
#include <kjudge/profile/invariants.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/profile/unreported.hpp>

namespace kj::profile {

namespace detail {

std::string format_ns(double ns) {
  if (std::fabs(ns) >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  if (std::fabs(ns) >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string short_kernel_name(std::string_view name, std::size_t max_chars) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  // Drop the parameter list: the first '(' outside template arguments that does not open
  // "(anonymous namespace)".
  int angle = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c == '(' && angle == 0 && !name.substr(i).starts_with("(anonymous namespace)")) {
      if (i > 0) name = name.substr(0, i);
      break;
    }
  }
  if (name.size() <= max_chars || max_chars < 8) return std::string(name);
  // Too long: drop the namespaces of the function itself (not those inside its template
  // arguments), then keep the head and close an open template argument list so the cut shows.
  const std::size_t head_end = std::min(name.find('<'), name.size());
  const std::size_t qualifier = name.substr(0, head_end).rfind("::");
  if (qualifier != std::string_view::npos) name.remove_prefix(qualifier + 2);
  if (name.size() <= max_chars) return std::string(name);
  std::string out(name.substr(0, max_chars - 4));
  int open = 0;
  for (const char c : out) open += c == '<' ? 1 : (c == '>' ? -1 : 0);
  out += open > 0 ? "...>" : "...";
  return out;
}

checked<double> kernel_share_pct(const kernel_profile& k, const side_profile& s) {
  if (!k.derived.duration_ns.ok()) return k.derived.duration_ns;
  if (!s.total) return checked<double>::missing("no total kernel time");
  const auto& total = s.total->derived.duration_ns;
  if (!total.ok()) return total;
  return checked<double>::pass(100.0 * k.derived.duration_ns.value() / total.value());
}

side_time forward_time(const side_profile& s) {
  if (s.device_time_ns > 0)
    return {s.device_time_ns,
            s.device_time_from_graph ? "device median, graph replay" : "device median"};
  if (s.cupti && s.cupti->launches.ok() && s.cupti->launches.value().kernel_span.count() > 0)
    return {s.cupti->launches.value().kernel_span.count(), "CUPTI span"};
  if (s.total && s.total->derived.duration_ns.ok())
    return {s.total->derived.duration_ns.value(), "summed ncu kernel time"};
  return {0, "no GPU time"};
}

side_launches launch_count(const side_profile& s) {
  if (s.cupti && s.cupti->launches.ok())
    return {s.cupti->launches.value().kernel_launches, "CUPTI"};
  return {s.kernels.size(), "ncu kernels"};
}

launch_counts fusion_counts(const side_profile& reference, const side_profile& candidate) {
  const auto r = launch_count(reference), c = launch_count(candidate);
  if (std::string_view(r.source) == c.source) return {r.count, c.count, r.source};
  return {reference.kernels.size(), candidate.kernels.size(), "ncu kernels"};
}

std::vector<std::size_t> kernels_by_time(const side_profile& s) {
  std::vector<std::size_t> order(s.kernels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&s](std::size_t a, std::size_t b) {
    return s.kernels[a].counters.duration_ns > s.kernels[b].counters.duration_ns;
  });
  return order;
}

std::vector<const timed_kernel*> cupti_kernels_by_time(const cupti_forward& f) {
  std::vector<const timed_kernel*> order;
  for (const auto& k : f.kernels) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->duration_ns > b->duration_ns; });
  return order;
}

std::vector<std::pair<std::string, double>> top_stalls(const derived_metrics& d, std::size_t n) {
  std::vector<std::pair<std::string, double>> out;
  if (!d.stall_share_pct.ok()) return out;
  for (const auto& [reason, pct] : d.stall_share_pct.value()) out.emplace_back(reason, pct);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string occupancy_limiter(const kernel_metrics& k) {
  const std::pair<const char*, std::uint32_t> limits[] = {
      {"registers", k.occupancy_limit_registers},
      {"shared memory", k.occupancy_limit_shared_mem},
      {"warps (block size)", k.occupancy_limit_warps},
      {"blocks per SM", k.occupancy_limit_blocks}};
  const char* best = nullptr;
  std::uint32_t smallest = 0;
  for (const auto& [what, blocks] : limits)
    if (blocks > 0 && (!best || blocks < smallest)) {
      best = what;
      smallest = blocks;
    }
  if (!best) return {};
  return fmt::format("{} ({} blocks/SM)", best, smallest);
}

}  // namespace detail

namespace {

using detail::format_ns;
using detail::metric_text;

constexpr int label_width = 36;
constexpr int value_width = 32;

void row(std::string& out, std::string_view label, const std::string& ref,
         const std::string& cand) {
  out += fmt::format("  {:<{}}{:<{}} {}\n", label, label_width, ref, value_width, cand);
}

/** A row of a figure of the side's total; "n/a" on a side without counters. */
void total_row(std::string& out, std::string_view label, const profile_report& r,
               const std::function<std::string(const kernel_profile&)>& cell) {
  auto text = [&cell](const side_profile& s) { return s.total ? cell(*s.total) : "n/a"; };
  row(out, label, text(r.reference), text(r.candidate_side));
}

std::string with_roof(const checked<double>& rate, const checked<double>& of_roof) {
  std::string s = metric_text(rate, format_bytes_per_s);
  if (rate.ok()) s += " (" + metric_text(of_roof, format_pct) + " of roof)";
  return s;
}

void render_totals(std::string& out, const profile_report& r) {
  out += fmt::format("  {:<{}}{:<{}} {}\n", "totals", label_width, "reference", value_width,
                     "candidate");
  auto side = [&](std::string_view label,
                  const std::function<std::string(const side_profile&)>& f) {
    row(out, label, f(r.reference), f(r.candidate_side));
  };
  side("kernels (ncu / CUPTI launches)", [](const side_profile& s) {
    const bool cupti = s.cupti && s.cupti->launches.ok();
    return fmt::format("{} / {}", s.kernels.size(),
                       cupti ? std::to_string(s.cupti->launches.value().kernel_launches) : "n/a");
  });
  side("forward time", [](const side_profile& s) {
    const auto t = detail::forward_time(s);
    return t.ns > 0 ? fmt::format("{} ({})", format_ns(t.ns), t.what) : std::string("n/a");
  });
  side("summed kernel time (ncu)", [](const side_profile& s) {
    // The total's duration fails when any kernel's does (withhold_timed).
    return s.total ? metric_text(s.total->derived.duration_ns, format_ns) : std::string("n/a");
  });
  total_row(out, "DRAM bytes (read + write)", r,
            [](const kernel_profile& t) { return dram_bytes_text(t.counters); });
  total_row(out, "DRAM bandwidth", r, [](const kernel_profile& t) {
    return with_roof(t.derived.dram_bytes_per_s, t.derived.dram_throughput_pct);
  });
  total_row(out, "L2 bandwidth", r, [](const kernel_profile& t) {
    return with_roof(t.derived.l2_bytes_per_s, t.derived.l2_throughput_pct);
  });
  total_row(out, "L1 hit rate / L2 hit rate", r, [](const kernel_profile& t) {
    return metric_text(t.derived.l1_hit_rate_pct, format_pct) + " / " +
           metric_text(t.derived.l2_hit_rate_pct, format_pct);
  });
  total_row(out, "occupancy achieved / theoretical", r, [](const kernel_profile& t) {
    return metric_text(t.derived.achieved_occupancy_pct, format_pct) + " / " +
           metric_text(t.derived.theoretical_occupancy_pct, format_pct);
  });
  total_row(out, "SM busy", r,
            [](const kernel_profile& t) { return metric_text(t.derived.sm_busy_pct, format_pct); });
  total_row(out, "compute / memory throughput", r, [](const kernel_profile& t) {
    return metric_text(t.derived.compute_throughput_pct, format_pct) + " / " +
           metric_text(t.derived.memory_throughput_pct, format_pct);
  });
  total_row(out, "global load sectors per request", r, [](const kernel_profile& t) {
    return metric_text(t.derived.global_load_sectors_per_request,
                       [](double v) { return fmt::format("{:.2f}", v); });
  });
  for (auto type : all_flop_types) {
    auto count = [type](const side_profile& s) {
      return s.total ? flop(s.total->counters.flops, type) : 0.0;
    };
    if (count(r.reference) <= 0 && count(r.candidate_side) <= 0) continue;
    // A count that lacks a counter ncu did not report is no count (its rate says which).
    total_row(
        out, fmt::format("{} FLOP (rate)", to_string(type)), r, [type](const kernel_profile& t) {
          const bool known = all_reported(t.counters, ncu_flop_metrics(type));
          std::string n = known ? format_flop(flop(t.counters.flops, type)) : "n/a";
          return fmt::format("{} ({})", n, metric_text(t.derived.flops(type), format_flop_per_s));
        });
  }
  side("arithmetic intensity", [](const side_profile& s) {
    return metric_text(s.intensity_flop_per_byte,
                       [](double v) { return fmt::format("{:.3g} FLOP/byte", v); });
  });
  side("achieved / attainable FLOP/s", [](const side_profile& s) {
    return metric_text(s.achieved_flop_per_s, format_flop_per_s) + " / " +
           metric_text(s.attainable_flop_per_s, format_flop_per_s);
  });
  side("bound", [](const side_profile& s) { return std::string(to_string(s.bound.bound)); });
  for (std::size_t i = 0; i < 4; ++i) {
    auto stall = [i](const side_profile& s) -> std::string {
      if (!s.total) return i == 0 ? "n/a" : "";
      const auto top = detail::top_stalls(s.total->derived, 4);
      if (i < top.size()) return fmt::format("{} {:.1f}%", top[i].first, top[i].second);
      if (i > 0) return "";
      // No stall listed: "n/a", or the flag when the shares failed their check.
      return metric_text(s.total->derived.stall_share_pct,
                         [](const auto&) { return std::string("n/a"); });
    };
    if (i > 0 && stall(r.reference).empty() && stall(r.candidate_side).empty()) break;
    row(out, i == 0 ? "stalls (share of stall cycles)" : "", stall(r.reference),
        stall(r.candidate_side));
  }
  side("memcpy / memset (CUPTI)", [](const side_profile& s) {
    if (!s.cupti || !s.cupti->launches.ok()) return std::string("n/a");
    const auto& l = s.cupti->launches.value();
    return fmt::format("{} / {}", l.memcpy_count, l.memset_count);
  });
  side("peak memory over baseline", [](const side_profile& s) {
    if (!s.cupti) return std::string("n/a");
    return metric_text(s.cupti->memory, [](const peak_memory& m) {
      return format_bytes(static_cast<double>(m.bytes));
    });
  });
  out +=
      fmt::format("  fusion ratio (reference / candidate launches, {}): {}\n",
                  detail::fusion_counts(r.reference, r.candidate_side).source,
                  metric_text(r.fusion_ratio, [](double v) { return fmt::format("{:.2f}", v); }));
  out += fmt::format("  reference bound: {}\n", r.reference.bound.reason);
  out += fmt::format("  candidate bound: {}\n", r.candidate_side.bound.reason);
}

void render_kernels(std::string& out, const side_profile& s, int max_kernels) {
  if (s.kernels.empty()) {
    out += fmt::format("\n{}: no kernel counters\n", s.side);
    return;
  }
  const auto order = detail::kernels_by_time(s);
  const std::size_t shown =
      std::min(order.size(), static_cast<std::size_t>(std::max(0, max_kernels)));
  out += fmt::format("\n{}: top {} of {} kernels by ncu duration\n", s.side, shown, order.size());
  for (std::size_t rank = 0; rank < shown; ++rank) {
    const auto& k = s.kernels[order[rank]].counters;
    const auto& d = s.kernels[order[rank]].derived;
    const std::string share =
        metric_text(detail::kernel_share_pct(s.kernels[order[rank]], s), format_pct);
    out += fmt::format("  #{:<2} {}\n", rank + 1, detail::short_kernel_name(k.display_name(), 96));
    out += fmt::format("      {} ({} of kernel time), launch #{}, grid {}x{}x{} block {}x{}x{}\n",
                       metric_text(d.duration_ns, format_ns), share, order[rank] + 1, k.grid.x,
                       k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z);
    out += fmt::format(
        "      regs {}  smem {}  waves {}  occupancy {} achieved / {} theoretical\n",
        all_reported(k, {ncu_metric::registers}) ? std::to_string(k.registers_per_thread)
                                                 : std::string("n/a"),
        all_reported(k, {ncu_metric::shared_static, ncu_metric::shared_dynamic})
            ? format_bytes(k.shared_mem_per_block_bytes)
            : std::string("n/a"),
        k.waves_per_sm > 0 ? fmt::format("{:.2f}", k.waves_per_sm) : std::string("n/a"),
        metric_text(d.achieved_occupancy_pct, format_pct),
        metric_text(d.theoretical_occupancy_pct, format_pct));
    out += fmt::format(
        "      SM SOL {}  memory SOL {}  DRAM {}  {}\n", metric_text(d.sm_sol_pct, format_pct),
        metric_text(d.memory_sol_pct, format_pct),
        with_roof(d.dram_bytes_per_s, d.dram_throughput_pct), to_string(d.bound.bound));
  }
}

void render_flags(std::string& out, const profile_report& r) {
  struct scoped {
    const char* scope;
    const flag* f;
  };
  std::vector<scoped> all;
  for (const auto& f : r.flags) all.push_back({"report", &f});
  for (const auto& f : r.reference.flags) all.push_back({"reference", &f});
  for (const auto& f : r.candidate_side.flags) all.push_back({"candidate", &f});
  if (!r.fusion_ratio.ok() && !r.fusion_ratio.is_missing())
    all.push_back({"report", &r.fusion_ratio.failure()});
  out += all.empty() ? "\nflags: none\n" : "\nflags\n";
  for (const char* severity : {severity_error, severity_warning, severity_info}) {
    const auto n = std::count_if(all.begin(), all.end(),
                                 [severity](const scoped& s) { return s.f->severity == severity; });
    if (n == 0) continue;
    out += fmt::format("  {} ({}):\n", severity, n);
    for (const auto& s : all)
      if (s.f->severity == severity)
        out += fmt::format("    [{}] {}: {}\n", s.scope, s.f->code, s.f->message);
  }
}

}  // namespace

std::string render_report(const profile_report& r, int max_kernels) {
  std::string out;
  out += fmt::format("kjudge profile  problem {}  candidate {}\n", r.problem, r.candidate);
  out += fmt::format("GPU {}; roofs: {}\n", r.gpu.empty() ? "unknown" : r.gpu,
                     r.ceilings_source.empty() ? "unknown" : r.ceilings_source);
  if (r.counters.collected)
    out += fmt::format("counters: {}, clock control {}, cache control {} ({:.1f} s profiled run)\n",
                       r.counters.tool, r.counters.clock_control, r.counters.cache_control,
                       r.counters.wall_s);
  else
    out += fmt::format("counters: not collected ({})\n", r.counters.unavailable_reason.empty()
                                                             ? "no reason given"
                                                             : r.counters.unavailable_reason);
  if (const auto& missing = r.counters.missing_metrics; !missing.empty())
    out += fmt::format("counters ncu did not report ({}): {}; the figures that need them are n/a\n",
                       missing.size(), fmt::join(missing, ", "));
  out += fmt::format("roofs in use: DRAM {}, L2 {}, L1/shared {}\n\n",
                     r.roofs.dram.roof() > 0 ? format_bytes_per_s(r.roofs.dram.roof()) : "n/a",
                     r.roofs.l2.roof() > 0 ? format_bytes_per_s(r.roofs.l2.roof()) : "n/a",
                     r.roofs.l1.roof() > 0 ? format_bytes_per_s(r.roofs.l1.roof()) : "n/a");
  render_totals(out, r);
  render_kernels(out, r.reference, max_kernels);
  render_kernels(out, r.candidate_side, max_kernels);
  render_flags(out, r);
  return out;
}

}  // namespace kj::profile
