#include <kjudge/eval/combine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/stats.hpp>

namespace kj::eval {

namespace {

using measure::figure;
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

nlohmann::json run_entry(const eval_result& r) {
  return {{"status", std::string(to_string(r.status))},
          {"message", r.message},
          {"wall_s", r.wall_s},
          {"started_by", r.worker.started_by}};
}

/** A figure's note without the sampling loop's remark ("stopped by budget at ..."), which
 *  described one process: a note on the method (why no graph was replayed) stays. */
std::string method_note(const std::string& note) {
  if (note.starts_with("stopped by")) return {};
  const auto at = note.find("; stopped by");
  return at == std::string::npos ? note : note.substr(0, at);
}

/** The larger of the finite or infinite values among `v` (NaN: not computed, left out). */
double largest(std::initializer_list<double> v) {
  double out = nan;
  for (const double x : v)
    if (!std::isnan(x)) out = std::isnan(out) ? x : std::max(out, x);
  return out;
}

/** The standard error of the processes' medians over the pooled median, in percent: their
 *  standard deviation over sqrt(N). */
double processes_rse_pct(const std::vector<double>& medians, double pooled) {
  const std::size_t n = medians.size();
  if (n < 2) return nan;
  double mean = 0;
  for (const double m : medians) mean += m;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (const double m : medians) ss += (m - mean) * (m - mean);
  const double se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  if (se == 0.0) return 0.0;
  if (pooled == 0.0) return std::numeric_limits<double>::infinity();
  return 100.0 * se / std::abs(pooled);
}

/** One figure of one side, pooled over the processes' (figs[p] is process p's; `sets` the
 *  input sets a process had). */
figure pool_figure(const std::vector<const figure*>& figs, std::size_t sets,
                   const measure::timing_options& o) {
  const std::size_t n = figs.size();
  const auto invalid =
      std::find_if(figs.begin(), figs.end(), [](const figure* f) { return !f->valid; });
  if (invalid != figs.end()) {
    figure out = **invalid;
    // Not taken in every process (on the CPU: no GPU figures) needs no name; otherwise say which.
    const bool all =
        std::none_of(figs.begin(), figs.end(), [](const figure* f) { return f->valid; });
    if (!all)
      out.note = fmt::format("process {} of {}: {}", invalid - figs.begin() + 1, n, out.note);
    return out;
  }
  figure out = *figs[0];
  out.samples_us.clear();
  out.samples_set.clear();
  out.samples_process.clear();
  out.process_medians_us.clear();
  out.discarded_throttled = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const figure& f = *figs[p];
    out.samples_us.insert(out.samples_us.end(), f.samples_us.begin(), f.samples_us.end());
    for (std::size_t i = 0; i < f.samples_us.size(); ++i) {
      const std::uint32_t set = i < f.samples_set.size() ? f.samples_set[i] : 0u;
      out.samples_set.push_back(static_cast<std::uint32_t>(p * sets) + set);
      out.samples_process.push_back(static_cast<std::uint32_t>(p));
    }
    out.process_medians_us.push_back(f.summary.median);
    out.discarded_throttled += f.discarded_throttled;
  }
  out.summary = stats::summarize(out.samples_us);
  const auto g =
      stats::median_rse_by_group(out.samples_us, out.samples_set, measure::rse_resamples);
  out.rse_samples_pct = g.samples_pct;
  out.rse_sets_pct = g.groups_pct;
  out.rse_processes_pct = processes_rse_pct(out.process_medians_us, out.summary.median);
  out.summary.rse_pct = largest({g.samples_pct, g.groups_pct, out.rse_processes_pct});
  out.set_medians_us = stats::group_medians(out.samples_us, out.samples_set, n * sets);
  out.noisy = out.summary.n < o.min_samples || !(out.summary.rse_pct < o.target_rse_pct);
  out.note = method_note(figs[0]->note);
  if (out.noisy) {
    if (!out.note.empty()) out.note += "; ";
    out.note += fmt::format(
        "across {} processes: {:.3g}% relative error of the median with {} samples (target "
        "{:.3g}%, at least {}): {:.3g}% over the samples, {:.3g}% over the input sets, {:.3g}% "
        "over the processes' medians",
        n, out.summary.rse_pct, out.summary.n, o.target_rse_pct, o.min_samples, g.samples_pct,
        g.groups_pct, out.rse_processes_pct);
  }
  return out;
}

/** The speedup of one figure kind from the pooled figures: the pooled medians' ratio with the
 *  bootstrap over every process's sets, widened to cover the t interval of the processes' own
 *  ratios. */
measure::speedup pool_speedup(const figure& ref, const figure& cand,
                              const measure::timing_options& o) {
  measure::speedup s;
  s.kind = ref.kind;
  s.ci = stats::bootstrap_ratio_of_medians_by_group(ref.samples_us, ref.samples_set,
                                                    cand.samples_us, cand.samples_set,
                                                    o.bootstrap_resamples, o.confidence);
  s.valid = s.ci.ratio > 0;
  if (std::min(ref.samples_us.size(), cand.samples_us.size()) < 2) {
    s.ci.lo = s.ci.hi = nan;
    s.ci.resamples = 0;
    return s;
  }
  const std::size_t n = std::min(ref.process_medians_us.size(), cand.process_medians_us.size());
  std::vector<double> logs;
  for (std::size_t p = 0; p < n; ++p) {
    const double r = ref.process_medians_us[p] / cand.process_medians_us[p];
    if (std::isfinite(r) && r > 0) logs.push_back(std::log(r));
  }
  if (!s.valid || logs.size() < 2) return s;
  const double k = static_cast<double>(logs.size());
  double mean = 0;
  for (const double l : logs) mean += l;
  mean /= k;
  double ss = 0;
  for (const double l : logs) ss += (l - mean) * (l - mean);
  const double half =
      stats::student_t_quantile(0.5 + o.confidence / 2.0, k - 1.0) * std::sqrt(ss / (k - 1.0) / k);
  s.ci.lo = std::min(s.ci.lo, std::exp(mean - half));
  s.ci.hi = std::max(s.ci.hi, std::exp(mean + half));
  s.ci.by_process = true;
  return s;
}

measure::comparison pool_timing(const std::vector<eval_result>& runs,
                                const measure::timing_options& o) {
  const std::size_t n = runs.size();
  measure::comparison out = *runs[0].timing;
  out.processes = n;
  std::size_t sets = 0;
  for (const auto& r : runs)
    sets = std::max({sets, r.timing->reference.input_sets, r.timing->candidate.input_sets});
  for (auto side : {&measure::comparison::reference, &measure::comparison::candidate}) {
    measure::side_result& s = out.*side;
    s.spent_s = 0;
    for (auto fig : {&measure::side_result::device, &measure::side_result::stream,
                     &measure::side_result::host_wall}) {
      std::vector<const figure*> figs;
      for (const auto& r : runs) figs.push_back(&((*r.timing).*side.*fig));
      s.*fig = pool_figure(figs, sets, o);
    }
    for (const auto& r : runs) {
      s.spent_s += ((*r.timing).*side).spent_s;
      s.host_sync_detected = s.host_sync_detected || ((*r.timing).*side).host_sync_detected;
    }
  }
  for (const auto& r : runs) {
    const auto& c = r.timing->clocks;
    if (c.available && c.min_sm_mhz > 0)
      out.clocks.min_sm_mhz =
          out.clocks.min_sm_mhz > 0 ? std::min(out.clocks.min_sm_mhz, c.min_sm_mhz) : c.min_sm_mhz;
    if (r.timing->stopped_by != out.stopped_by) out.stopped_by = "mixed";
  }
  // The kinds the first process's speedups had (the same checks ran in every process).
  out.speedups.clear();
  for (const auto& first : runs[0].timing->speedups) {
    const figure& ref = measure::figure_of(out.reference, first.kind);
    const figure& cand = measure::figure_of(out.candidate, first.kind);
    bool valid = ref.valid && cand.valid;
    for (const auto& r : runs)
      valid = valid && std::any_of(r.timing->speedups.begin(), r.timing->speedups.end(),
                                   [&](const measure::speedup& x) {
                                     return x.kind == first.kind && x.valid;
                                   });
    if (!valid) {
      measure::speedup s;
      s.kind = first.kind;
      out.speedups.push_back(s);
      continue;
    }
    out.speedups.push_back(pool_speedup(ref, cand, o));
  }
  return out;
}

}  // namespace

eval_result combine_runs(std::vector<eval_result> runs, const measure::timing_options& options) {
  KJ_EXPECTS(!runs.empty());
  if (runs.size() == 1) return std::move(runs.front());
  const std::size_t n = runs.size();
  nlohmann::json entries = nlohmann::json::array();
  double wall = 0;
  for (const auto& r : runs) {
    entries.push_back(run_entry(r));
    wall += r.wall_s;
  }
  // The first run that is not correct is the verdict.
  for (std::size_t p = 0; p < n; ++p) {
    if (runs[p].status == eval_status::correct) continue;
    eval_result out = std::move(runs[p]);
    out.message = fmt::format("process {} of {}: {}", p + 1, n, out.message);
    out.runs = std::move(entries);
    out.wall_s = wall;
    return out;
  }
  const bool timed = std::all_of(runs.begin(), runs.end(),
                                 [](const eval_result& r) { return r.timing.has_value(); });
  eval_result out = runs[0];
  out.runs = std::move(entries);
  out.wall_s = wall;
  if (!timed) return out;
  out.timing = pool_timing(runs, options);
  // Flags: the first run's, then the others' that it does not have; noisy_timing from the
  // pooled figures instead of any process's.
  std::vector<flag> flags;
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t p = 0; p < n; ++p)
    for (const auto& f : runs[p].flags) {
      if (f.code == "noisy_timing" || !seen.insert({f.code, f.message}).second) continue;
      flag g = f;
      if (p > 0) g.message = fmt::format("process {} of {}: {}", p + 1, n, f.message);
      flags.push_back(std::move(g));
    }
  for (const auto* s : {&out.timing->reference, &out.timing->candidate})
    for (const auto* f : {&s->device, &s->stream, &s->host_wall})
      if (f->valid && f->noisy)
        flags.push_back({"noisy_timing", "warning",
                         fmt::format("{} {} figure is noisy: {}", s->name,
                                     measure::to_string(f->kind), f->note)});
  out.flags = std::move(flags);
  return out;
}

}  // namespace kj::eval
