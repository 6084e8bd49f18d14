#include <kjudge/profile/unreported.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <utility>

#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/profile/report.hpp>

namespace kj::profile {

namespace {

/** The lists one after the other. */
metric_names joined(std::initializer_list<metric_names> lists) {
  metric_names out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

}  // namespace

metric_names all_flop_metrics() {
  metric_names out;
  for (auto t : all_flop_types) out = joined({out, ncu_flop_metrics(t)});
  return out;
}

metric_names unreported_among(const std::vector<std::string>& unreported,
                              const metric_names& inputs) {
  metric_names out;
  for (const auto name : inputs)
    if (std::find(unreported.begin(), unreported.end(), name) != unreported.end() &&
        std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  return out;
}

void withhold_unreported(derived_metrics& d, const std::vector<std::string>& unreported,
                         const ceilings& roofs, bool total) {
  if (unreported.empty()) return;
  namespace col = ncu_metric;
  const auto w = [&unreported](auto& m, std::string_view what, const metric_names& inputs) {
    return withhold(m, what, unreported, inputs);
  };
  const metric_names dram{col::duration, col::dram_read, col::dram_write};
  const metric_names l2{col::duration, col::l2_sectors};
  const metric_names l1{col::duration, col::l1_sectors};
  const metric_names weights = total ? metric_names{col::duration} : metric_names{};
  const metric_names sm_sol = joined({{col::sm_sol}, weights});
  const metric_names memory_sol = joined({{col::memory_sol}, weights});
  w(d.duration_ns, "kernel duration", {col::duration});
  w(d.dram_bytes_per_s, "DRAM bandwidth", dram);
  w(d.dram_throughput_pct, "DRAM throughput", dram);
  w(d.l2_bytes_per_s, "L2 bandwidth", l2);
  w(d.l2_throughput_pct, "L2 throughput", l2);
  w(d.l1_bytes_per_s, "L1/shared bandwidth", l1);
  w(d.l1_throughput_pct, "L1/shared throughput", l1);
  w(d.l1_hit_rate_pct, "L1 hit rate", {col::l1_hit_sectors, col::l1_sectors});
  w(d.l2_hit_rate_pct, "L2 hit rate", {col::l2_hit_sectors, col::l2_sectors});
  w(d.global_load_sectors_per_request, "global load sectors per request",
    {col::load_sectors, col::load_requests});
  w(d.global_store_sectors_per_request, "global store sectors per request",
    {col::store_sectors, col::store_requests});
  w(d.achieved_occupancy_pct, "achieved occupancy",
    {col::warps_active, col::sm_active_cycles, col::max_warps});
  w(d.theoretical_occupancy_pct, "theoretical occupancy",
    joined({{col::theoretical_occupancy}, weights}));
  w(d.sm_busy_pct, "SM busy", {col::sm_active_cycles, col::elapsed_cycles, col::sm_count});
  w(d.sm_sol_pct, "SM SOL", sm_sol);
  w(d.memory_sol_pct, "memory SOL", memory_sol);
  w(d.stall_cycles_per_issued_instruction, "stall cycles per issued instruction",
    {col::instructions_issued});

  metric_names memory_parts = memory_sol, compute_parts = sm_sol;
  for (const auto& [roof, level] :
       {std::pair{roofs.dram.roof(), &dram}, std::pair{roofs.l2.roof(), &l2},
        std::pair{roofs.l1.roof(), &l1}})
    if (roof > 0) memory_parts = joined({memory_parts, *level});
  for (auto t : all_flop_types) {
    const auto i = static_cast<std::size_t>(t);
    const metric_names rate = joined({{col::duration}, ncu_flop_metrics(t)});
    w(d.flop_per_s[i], fmt::format("{} FLOP/s", to_string(t)), rate);
    w(d.flop_throughput_pct[i], fmt::format("{} throughput", to_string(t)), rate);
    if (roofs.at(t).roof() > 0) compute_parts = joined({compute_parts, rate});
  }
  w(d.arithmetic_intensity_flop_per_byte, "arithmetic intensity",
    joined({all_flop_metrics(), {col::dram_read, col::dram_write}}));

  std::vector<std::string> withheld;  // reasons of the withheld largest throughputs
  for (const auto& [m, what, parts] :
       {std::tuple{&d.memory_throughput_pct, "memory throughput", &memory_parts},
        std::tuple{&d.compute_throughput_pct, "compute throughput", &compute_parts}})
    if ((m->ok() || m->is_missing()) && w(*m, what, *parts))
      withheld.push_back(m->failure().message);
  if (!withheld.empty()) {
    d.bound = classify(d.compute_throughput_pct, d.memory_throughput_pct);
    if (d.bound.bound == bottleneck::unknown)
      d.bound.reason = fmt::format("{} ({})", d.bound.reason, fmt::join(withheld, "; "));
  }
  if (!d.duration_ns.ok() && !d.duration_ns.is_missing()) withhold_timed(d, d.duration_ns);
}

flag missing_metrics_flag(const std::vector<std::string>& unreported) {
  const std::size_t named = std::min(unreported.size(), missing_metrics_named);
  std::string names = fmt::format(
      "{}",
      fmt::join(unreported.begin(), unreported.begin() + static_cast<std::ptrdiff_t>(named), ", "));
  if (named < unreported.size())
    names += fmt::format(", and {} more in counters.missing_metrics", unreported.size() - named);
  const bool one = unreported.size() == 1;
  return {"ncu_metrics_missing", severity_warning,
          fmt::format("ncu's table has no column for {} metric{} kjudge reads ({}): every figure "
                      "that needs one is n/a, its reason naming the metric, not a number read "
                      "from a 0; this GPU or ncu version lacks {} under {}",
                      unreported.size(), one ? "" : "s", names, one ? "it" : "them",
                      one ? "that name" : "these names")};
}

std::vector<std::string> unreported_in(const std::vector<std::string>& table_missing,
                                       const kernel_metrics& k) {
  std::vector<std::string> out = table_missing;
  for (const auto& m : k.unreported_metrics)
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  return out;
}

flag values_missing_flag(const std::vector<std::string>& empty_values) {
  const std::size_t named = std::min(empty_values.size(), missing_metrics_named);
  std::string names =
      fmt::format("{}", fmt::join(empty_values.begin(),
                                  empty_values.begin() + static_cast<std::ptrdiff_t>(named), ", "));
  if (named < empty_values.size())
    names += fmt::format(", and {} more", empty_values.size() - named);
  return {"ncu_values_missing", severity_warning,
          fmt::format("ncu printed no value for {} metric{} in this kernel's row ({}): every "
                      "figure that needs one is n/a, its reason naming the metric",
                      empty_values.size(), empty_values.size() == 1 ? "" : "s", names)};
}

namespace detail {

namespace {

std::vector<std::string> owned(const metric_names& names) {
  return {names.begin(), names.end()};
}

}  // namespace

bool all_reported(const counter_source& c, const kernel_metrics& k,
                  std::initializer_list<std::string_view> metrics) {
  return unreported_among(unreported_in(c.missing_metrics, k), metric_names(metrics)).empty();
}

std::vector<std::string> unreported_dram_columns(const counter_source& c, const kernel_metrics& k) {
  return owned(unreported_among(unreported_in(c.missing_metrics, k),
                                {ncu_metric::dram_read, ncu_metric::dram_write}));
}

std::vector<std::string> unreported_flop_columns(const counter_source& c, const kernel_metrics& k,
                                                 flop_type t) {
  return owned(unreported_among(unreported_in(c.missing_metrics, k), ncu_flop_metrics(t)));
}

}  // namespace detail

}  // namespace kj::profile
