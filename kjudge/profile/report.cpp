#include <kjudge/profile/report.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/aggregate.hpp>
#include <kjudge/profile/format.hpp>
#include <kjudge/profile/invariants.hpp>
#include <kjudge/profile/unreported.hpp>

namespace kj::profile {

namespace {

using metric = checked<double>;

/** Kernel names in flag messages are cut to this many characters. */
constexpr std::size_t flag_name_chars = 60;

/** Flags of a checked metric worth listing: everything but `no_data`. */
template <class T>
void append_metric_flags(std::vector<flag>& out, const checked<T>& c) {
  for (const auto& f : c.flags())
    if (f.code != no_data_code) out.push_back(f);
}

/** The name flag messages use: short enough to read, with the template head. */
std::string flag_name(const kernel_metrics& k) {
  return detail::short_kernel_name(k.display_name(), flag_name_chars);
}

/** Derived-metric flags of one kernel (or the total) with the kernel named in the message: the
 *  invariants' messages say what broke, not where. */
void append_scoped(std::vector<flag>& out, const std::vector<flag>& more,
                   const std::string& where) {
  for (const auto& f : more) out.push_back({f.code, f.severity, where + ": " + f.message});
}

/** The kernel's own identifier, which CUPTI's and ncu's demanglers agree on: they print template
 *  arguments, lambdas, namespaces ("at::native::" vs "at::") and anonymous namespaces
 *  ("(anonymous namespace)" vs "<unnamed>") differently, so only the name after the last scope and
 *  before the template or parameter list is compared. */
std::string name_key(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  std::string s(name);
  for (const std::string_view anon : {"(anonymous namespace)::", "<unnamed>::"})
    for (auto at = s.find(anon); at != std::string::npos; at = s.find(anon))
      s.erase(at, anon.size());
  s = s.substr(0, s.find_first_of("<("));
  if (const auto scope = s.rfind("::"); scope != std::string::npos) s = s.substr(scope + 2);
  std::erase(s, ' ');
  return s;
}

bool same_dims(const launch_dims& a, const launch_dims& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

/** The same launch: the same kernel identifier and the same grid and block. */
bool same_kernel(const kernel_metrics& ncu, const timed_kernel& cupti) {
  const std::string key = name_key(cupti.name);
  const bool named = key == name_key(ncu.demangled_name) || key == name_key(ncu.name);
  return named && same_dims(ncu.grid, cupti.grid) && same_dims(ncu.block, cupti.block);
}

/** Launch-bound when gaps dominate the forward (device time: the eval's median, else CUPTI's
 *  span), else the class of the kernels' total; unknown when a kernel has no time or a broken one.
 *  The kernel times are CUPTI's where it timed the forward, checked here (the report holds no
 *  checked time per CUPTI kernel: the launch summary checks the forward's records as one
 *  figure): the clock of the span and of the events. ncu's own durations, about 1.3 us a kernel
 *  longer under its replay, made a forward of short kernels look busy and never launch-bound.
 *  Without CUPTI's, ncu's as derive() checked them (invariant 1; a kernel whose duration ncu did
 *  not give is missing there, not broken). */
classification classify_side(const side_inputs& in, const side_profile& s) {
  double sum_ns = 0;
  std::size_t timed = 0;
  // CUPTI's times serve where it timed every kernel it saw and dropped no record; else ncu's.
  const bool cupti_times = in.cupti && !in.cupti->kernels.empty() && in.cupti->launches.ok() &&
                           std::all_of(in.cupti->kernels.begin(), in.cupti->kernels.end(),
                                       [](const timed_kernel& k) { return k.duration_ns > 0; });
  for (const auto& k : s.kernels) {
    if (cupti_times) break;
    const auto& time = k.derived.duration_ns;
    if (time.is_missing())
      return {bottleneck::unknown,
              fmt::format("kernel {} has no duration ({}): no class without kernel times",
                          flag_name(k.counters), time.failure().message)};
    if (!time.ok())
      return {bottleneck::unknown,
              fmt::format("kernel {} failed its duration check ({}): no class from broken times",
                          flag_name(k.counters), time.failure().code)};
    sum_ns += time.value();
    ++timed;
  }
  if (cupti_times)
    for (const auto& k : in.cupti->kernels) {
      if (k.duration_ns <= 0) continue;  // untimed: a launch, but no time
      if (const auto bad = check_kernel_time(k.name, nanoseconds(k.duration_ns)); !bad.empty())
        return {bottleneck::unknown,
                fmt::format("kernel {} failed its duration check ({}): no class from broken times",
                            detail::short_kernel_name(k.name, flag_name_chars), bad.front().code)};
      sum_ns += k.duration_ns;
      ++timed;
    }
  if (timed == 0)
    return {bottleneck::unknown, "no kernel records: counters not collected and no CUPTI records"};
  // The gaps between eagerly issued launches decide launch-boundness; a graph replay's device
  // figure leaves most of them out, so then the eager CUPTI forward's span is the forward's time.
  // (Without a CUPTI span, the graph figure is all there is.)
  double device_ns = in.device_time_ns;
  if ((in.device_time_from_graph || device_ns <= 0) && in.cupti && in.cupti->launches.ok() &&
      in.cupti->launches.value().kernel_span.count() > 0)
    device_ns = in.cupti->launches.value().kernel_span.count();
  const classification kernels_bound =
      s.total ? s.total->derived.bound
              : classification{bottleneck::unknown, "no counters: no throughput to classify"};
  return classify_forward(nanoseconds(sum_ns), nanoseconds(device_ns), kernels_bound);
}

/** The roofline point of the side's total (see side_profile). */
void place_on_roofline(side_profile& s, const ceilings& roofs) {
  if (!s.total) {
    s.intensity_flop_per_byte = metric::missing("roofline: no counters");
    s.achieved_flop_per_s = metric::missing("roofline: no counters");
    s.attainable_flop_per_s = metric::missing("roofline: no counters");
    return;
  }
  const auto& t = s.total->counters;
  const auto& duration = s.total->derived.duration_ns;  // checked: a broken time gives no rate
  const double flop_sum = total_flop(t.flops);
  s.intensity_flop_per_byte = s.total->derived.arithmetic_intensity_flop_per_byte;
  if (!duration.ok())
    s.achieved_flop_per_s = duration;
  else if (flop_sum <= 0)
    s.achieved_flop_per_s = metric::missing("achieved FLOP/s: no FLOP counted");
  else
    s.achieved_flop_per_s = metric::pass(flop_sum / (duration.value() * 1e-9));
  // A FLOP counter ncu did not report reads as 0: the sum would lack that type's work.
  if (duration.ok())
    (void)withhold(s.achieved_flop_per_s, "achieved FLOP/s", t.unreported_metrics,
                   all_flop_metrics());

  const flop_type dominant = dominant_flop_type(t.flops);
  const double compute_roof = roofs.at(dominant).roof();
  const double dram_roof = roofs.dram.roof();
  if (!s.intensity_flop_per_byte.ok())
    s.attainable_flop_per_s = s.intensity_flop_per_byte;
  else if (compute_roof <= 0)
    s.attainable_flop_per_s =
        metric::missing(fmt::format("attainable FLOP/s: no {} roof known", to_string(dominant)));
  else if (dram_roof <= 0)
    s.attainable_flop_per_s = metric::missing("attainable FLOP/s: no DRAM roof known");
  else
    s.attainable_flop_per_s =
        metric::pass(std::min(compute_roof, s.intensity_flop_per_byte.value() * dram_roof));

  // The check is each type's own: types on separate units (FP32 and FP64, tensor cores) run side
  // by side, so their sum may pass the dominant type's roof; no type may pass its own, nor the
  // DRAM roof at its own intensity (its FLOP over all the bytes: what DRAM can feed it).
  if (!s.achieved_flop_per_s.ok() || !s.intensity_flop_per_byte.ok() ||
      s.intensity_flop_per_byte.value() <= 0)
    return;
  const double seconds = duration.value() * 1e-9;
  const double bytes = flop_sum / s.intensity_flop_per_byte.value();
  for (const flop_type type : all_flop_types) {
    const double work = flop(t.flops, type);
    const double roof = roofs.at(type).roof();
    if (work <= 0 || roof <= 0) continue;
    const double achieved = work / seconds;
    const double intensity = work / bytes;
    const double attainable = dram_roof > 0 ? std::min(roof, intensity * dram_roof) : roof;
    if (achieved <= measured_ceiling_tolerance * attainable) continue;
    s.achieved_flop_per_s = metric::fail(
        {"flops_above_roofline", severity_error,
         fmt::format("achieved {} {} is above {:.2f} x its roof at its intensity, {} ({} roof {}, "
                     "{:.3g} FLOP/byte x DRAM roof {}): the FLOP count, the bytes or the duration "
                     "is wrong",
                     format_flop_per_s(achieved), to_string(type), measured_ceiling_tolerance,
                     format_flop_per_s(attainable), to_string(type), format_flop_per_s(roof),
                     intensity, format_bytes_per_s(dram_roof))});
    return;
  }
}

/** Pairs of (ncu index, CUPTI index): by position when counts and names agree, else each ncu
 *  kernel with the next CUPTI kernel of the same name. */
std::vector<std::pair<std::size_t, std::size_t>> pair_kernels(
    const std::vector<kernel_metrics>& ncu, const std::vector<timed_kernel>& cupti) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  bool positional = ncu.size() == cupti.size();
  for (std::size_t i = 0; positional && i < ncu.size(); ++i)
    positional = same_kernel(ncu[i], cupti[i]);
  if (positional) {
    for (std::size_t i = 0; i < ncu.size(); ++i) pairs.emplace_back(i, i);
    return pairs;
  }
  std::size_t next = 0;
  for (std::size_t i = 0; i < ncu.size(); ++i)
    for (std::size_t j = next; j < cupti.size(); ++j)
      if (same_kernel(ncu[i], cupti[j])) {
        pairs.emplace_back(i, j);
        next = j + 1;
        break;
      }
  return pairs;
}

void match_durations(side_profile& s, const side_inputs& in, std::vector<flag>& flags) {
  if (in.ncu_kernels.empty() || !in.cupti || in.cupti->kernels.empty()) return;
  const auto& ncu = in.ncu_kernels;
  const auto& cupti = in.cupti->kernels;
  std::size_t matched = 0;
  for (const auto& [i, j] : pair_kernels(ncu, cupti)) {
    // A side without a duration (ncu did not collect it, CUPTI could not time the kernel) has
    // nothing to compare: the pair counts as unmatched.
    if (ncu[i].duration_ns <= 0 || cupti[j].duration_ns <= 0) continue;
    ++matched;
    duration_match m;
    m.name = ncu[i].display_name();
    m.cupti_ns = cupti[j].duration_ns;
    m.ncu_ns = ncu[i].duration_ns;
    m.difference_pct = 100.0 * std::fabs(m.cupti_ns - m.ncu_ns) / m.ncu_ns;
    if (std::max(m.cupti_ns, m.ncu_ns) >= duration_match_min_ns &&
        m.difference_pct > duration_match_tolerance_pct)
      flags.push_back(
          {"duration_disagrees", severity_warning,
           fmt::format(
               "kernel {} (#{}): CUPTI timed {:.2f} us, ncu {:.2f} us, {:.1f}% apart "
               "(over {:.0f}% for a kernel >= {:.0f} us): the cache state of the two "
               "forwards differs (ncu flushes before each replay pass), or the tools time "
               "the kernel differently (on the H200 ncu's duration holds about 1.3 us more of "
               "fixed per-kernel time than CUPTI's: 2.1 against 0.8 us for an empty kernel)",
               flag_name(ncu[i]), i + 1, m.cupti_ns / 1e3, m.ncu_ns / 1e3, m.difference_pct,
               duration_match_tolerance_pct, duration_match_min_ns / 1e3)});
    s.durations.push_back(std::move(m));
  }
  if (matched < ncu.size() || matched < cupti.size())
    flags.push_back(
        {"duration_unmatched", severity_warning,
         fmt::format("{} of {} ncu kernels and {} of {} CUPTI kernels have no partner by launch "
                     "order and name: the profiled and the timed forward ran different kernels; "
                     "their durations are not compared",
                     ncu.size() - matched, ncu.size(), cupti.size() - matched, cupti.size())});
}

/** `table_missing`: the columns ncu's table lacks, which no kernel of it reported; they join each
 *  kernel's own unreported values (counters.unreported_metrics of every kernel and total). */
side_profile build_side(std::string name, const side_inputs& in, const ceilings& roofs,
                        const std::vector<std::string>& table_missing) {
  side_profile s;
  s.side = std::move(name);
  s.cupti = in.cupti;
  s.device_time_ns = in.device_time_ns;
  s.device_time_from_graph = in.device_time_from_graph;
  std::vector<flag> flags;
  std::vector<flag> kernel_flags;       // unscoped, to leave out what the total merely repeats
  std::vector<kernel_metrics> kernels;  // with the table's missing columns
  for (const auto& row : in.ncu_kernels) {
    kernel_metrics& k = kernels.emplace_back(row);
    add_unreported(k.unreported_metrics, table_missing);
    kernel_profile p{k, derive(k, roofs)};
    withhold_unreported(p.derived, k.unreported_metrics, roofs, /*total=*/false);
    append(kernel_flags, p.derived.flags());
    const std::string scope = fmt::format("kernel #{} {}", s.kernels.size() + 1, flag_name(k));
    append_scoped(flags, p.derived.flags(), scope);
    // Values its row left empty; a column the whole table lacks has the report's own flag.
    std::vector<std::string> row_gaps;
    for (const auto& m : row.unreported_metrics)
      if (std::find(table_missing.begin(), table_missing.end(), m) == table_missing.end())
        row_gaps.push_back(m);
    if (!row_gaps.empty()) append_scoped(flags, {values_missing_flag(row_gaps)}, scope);
    s.kernels.push_back(std::move(p));
  }
  if (!kernels.empty()) {
    try {
      kernel_metrics t = aggregate(kernels);
      derived_metrics d = derive(t, roofs);
      withhold_unreported(d, t.unreported_metrics, roofs, /*total=*/true);
      // A total over a kernel with a broken time has no rate either (invariant 1).
      for (const auto& p : s.kernels)
        if (!p.derived.duration_ns.ok() && !p.derived.duration_ns.is_missing()) {
          withhold_timed(d, p.derived.duration_ns);
          break;
        }
      std::vector<flag> own;
      for (const auto& f : d.flags())
        if (std::none_of(kernel_flags.begin(), kernel_flags.end(),
                         [&f](const flag& g) { return same_flag(f, g); }))
          own.push_back(f);
      append_scoped(flags, own, fmt::format("total of {} kernels", kernels.size()));
      s.total = kernel_profile{std::move(t), std::move(d)};
    } catch (const kj::error& e) {
      flags.push_back({"kernels_not_combinable", severity_error,
                       fmt::format("no total over the kernels: {}", e.message())});
    }
  }
  s.bound = classify_side(in, s);
  place_on_roofline(s, roofs);
  append_metric_flags(flags, s.achieved_flop_per_s);
  match_durations(s, in, flags);
  if (in.cupti) {
    append_metric_flags(flags, in.cupti->launches);
    append_metric_flags(flags, in.cupti->memory);
  }
  append_unique(s.flags, flags);
  return s;
}

}  // namespace

profile_report build_report(std::string problem, std::string candidate, std::string gpu,
                            const ceilings& roofs, std::string ceilings_source,
                            counter_source counters, const side_inputs& reference,
                            const side_inputs& candidate_inputs) {
  profile_report r;
  r.problem = std::move(problem);
  r.candidate = std::move(candidate);
  r.gpu = std::move(gpu);
  r.ceilings_source = std::move(ceilings_source);
  r.roofs = roofs;
  r.counters = std::move(counters);
  const auto& unreported = r.counters.missing_metrics;
  r.reference = build_side("reference", reference, roofs, unreported);
  r.candidate_side = build_side("candidate", candidate_inputs, roofs, unreported);

  const auto launches = detail::fusion_counts(r.reference, r.candidate_side);
  r.fusion_ratio = fusion_ratio(launches.reference, launches.candidate);

  append_unique(r.flags, check_ceilings(roofs));
  if (!unreported.empty()) append_unique(r.flags, {missing_metrics_flag(unreported)});
  if (const auto& bad = r.counters.nvtx_unreadable; !bad.empty())
    append_unique(r.flags,
                  {{"ncu_nvtx_unreadable", severity_warning,
                    fmt::format("the NVTX range stack of {} kernel(s) could not be read to its end "
                                "(the ranges before that point were kept, and kjudge's own "
                                "ranges looked for in the rest: a kernel is still the reference's "
                                "or the candidate's): {}",
                                bad.size(), bad.front())}});
  if (!r.counters.collected)
    append_unique(r.flags, {{"counters_unavailable", severity_info,
                             fmt::format("hardware counters were not collected: {}",
                                         r.counters.unavailable_reason.empty()
                                             ? std::string("no reason given")
                                             : r.counters.unavailable_reason)}});
  return r;
}

}  // namespace kj::profile
