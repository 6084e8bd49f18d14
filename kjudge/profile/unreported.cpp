#include <kjudge/profile/unreported.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <utility>

#include <kjudge/core/text.hpp>
#include <kjudge/profile/format.hpp>
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
  // One column a stall reason: shares of a total that lacks one would be the others' shares of
  // less (a reason ncu printed n/a for read as none, the rest renormalised to 100%).
  metric_names stalls;
  for (const auto& name : ncu_metric_list())
    if (name.starts_with(ncu_stall_prefix)) stalls.push_back(name);
  w(d.stall_share_pct, "stall shares", stalls);
  w(d.stall_cycles_per_issued_instruction, "stall cycles per issued instruction",
    joined({{col::instructions_issued}, stalls}));

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
    joined({all_flop_metrics(), dram_byte_metrics}));

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

namespace {

/** The first missing_metrics_named of `names`, then "and N more" and `more_suffix`. */
std::string first_names(const std::vector<std::string>& names, std::string_view more_suffix) {
  std::string out = listed(names, missing_metrics_named, ", ");
  if (names.size() > missing_metrics_named) out += more_suffix;
  return out;
}

}  // namespace

flag missing_metrics_flag(const std::vector<std::string>& unreported) {
  const bool one = unreported.size() == 1;
  return {"ncu_metrics_missing", severity_warning,
          fmt::format("ncu's table has no column for {} metric{} kjudge reads ({}): every figure "
                      "that needs one is n/a, its reason naming the metric, not a number read "
                      "from a 0; this GPU or ncu version lacks {} under {}",
                      unreported.size(), one ? "" : "s",
                      first_names(unreported, " in counters.missing_metrics"), one ? "it" : "them",
                      one ? "that name" : "these names")};
}

flag values_missing_flag(const std::vector<std::string>& empty_values) {
  return {"ncu_values_missing", severity_warning,
          fmt::format("ncu printed no value for {} metric{} in this kernel's row ({}): every "
                      "figure that needs one is n/a, its reason naming the metric",
                      empty_values.size(), empty_values.size() == 1 ? "" : "s",
                      first_names(empty_values, ""))};
}

void add_unreported(std::vector<std::string>& to, const std::vector<std::string>& more) {
  for (const auto& m : more)
    if (std::find(to.begin(), to.end(), m) == to.end()) to.push_back(m);
}

bool all_reported(const kernel_metrics& k, const metric_names& metrics) {
  return unreported_among(k.unreported_metrics, metrics).empty();
}

std::string dram_bytes_text(const kernel_metrics& k) {
  return all_reported(k, dram_byte_metrics) ? format_bytes(k.dram_bytes()) : std::string("n/a");
}

}  // namespace kj::profile
