#include <kjudge/eval/combine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/stats.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/eval/timing_checks.hpp>

namespace kj::eval {

namespace {

using measure::figure;
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
/** Processes whose medians of a figure differ by more than this factor are said to disagree. */
constexpr double k_processes_apart = 1.5;

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

/** The sum of the processes' squared shares of a pooled figure's samples (1 / N for equal
 *  shares): how much of the processes' spread passes to a quantity that weighs each by its share,
 *  as the pooled median does (one process with most of the samples all but sets it). */
double squared_shares(const figure& f) {
  std::vector<double> counts;
  for (const std::uint32_t p : f.samples_process) {
    if (p >= counts.size()) counts.resize(p + 1, 0.0);
    counts[p] += 1.0;
  }
  const double total = static_cast<double>(f.samples_process.size());
  double sum = 0;
  for (const double c : counts) sum += total > 0 ? (c / total) * (c / total) : 0.0;
  return sum;
}

/** The processes' part of a pooled figure's standard error, in percent of its median: the
 *  standard deviation of the processes' medians times sqrt(squared_shares()). */
double processes_rse_pct(const figure& f) {
  if (f.process_medians_us.size() < 2) return nan;
  const double se = stats::summarize(f.process_medians_us).stddev * std::sqrt(squared_shares(f));
  if (se == 0.0) return 0.0;
  if (f.summary.median == 0.0) return std::numeric_limits<double>::infinity();
  return 100.0 * se / std::abs(f.summary.median);
}

/** One figure of one side, pooled over the processes' (figs[p] is process p's; `sets` the
 *  input sets a process had, `requested` the processes asked for). A figure some process took
 *  by another method or cache state than the first (a graph capture that failed in one process:
 *  its eager launches among the others' replays) is not pooled: its flag goes to `flags`. */
figure pool_figure(const std::vector<const figure*>& figs, std::size_t sets, std::size_t requested,
                   const std::string& side, const measure::timing_options& o,
                   std::vector<flag>& flags) {
  const std::size_t n = figs.size();
  // Every process's discarded samples count, whether or not the figure is pooled (a copy of one
  // process's figure would say that process's alone).
  std::size_t discarded = 0;
  for (const figure* f : figs) discarded += f->discarded_throttled;
  // So do the samples discarded for waits for a CPU, and the longest waits of any process.
  figure waits;
  for (const figure* f : figs) {
    waits.discarded_cpu_wait += f->discarded_cpu_wait;
    waits.discarded_cpu_wait_max_us =
        std::max(waits.discarded_cpu_wait_max_us, f->discarded_cpu_wait_max_us);
    if (!std::isnan(f->cpu_wait_max_us))
      waits.cpu_wait_max_us = std::isnan(waits.cpu_wait_max_us)
                                  ? f->cpu_wait_max_us
                                  : std::max(waits.cpu_wait_max_us, f->cpu_wait_max_us);
    waits.cpu_wait_total_us += f->cpu_wait_total_us;
  }
  // The kept samples' share of waiting, pooled only where every process with samples read its
  // waits (else the samples without a wait would dilute it).
  const bool every_read = std::all_of(figs.begin(), figs.end(), [](const figure* f) {
    return f->samples_us.empty() || !std::isnan(f->cpu_wait_max_us);
  });
  const auto counted = [&](figure out) {
    out.discarded_throttled = discarded;
    out.discarded_cpu_wait = waits.discarded_cpu_wait;
    out.discarded_cpu_wait_max_us = waits.discarded_cpu_wait_max_us;
    out.cpu_wait_max_us = waits.cpu_wait_max_us;
    out.cpu_wait_total_us = waits.cpu_wait_total_us;
    // A figure that stands for one process (not pooled) keeps no pooled share: the waits pooled
    // above are every process's, its samples one's.
    out.cpu_wait_share_pct = std::numeric_limits<double>::quiet_NaN();
    return out;
  };
  const auto invalid =
      std::find_if(figs.begin(), figs.end(), [](const figure* f) { return !f->valid; });
  if (invalid != figs.end()) {
    figure out = counted(**invalid);
    // Not taken in every process (on the CPU: no GPU figures) needs no name; otherwise say which.
    const bool all =
        std::none_of(figs.begin(), figs.end(), [](const figure* f) { return f->valid; });
    if (!all)
      out.note =
          fmt::format("process {} of {}: {}", invalid - figs.begin() + 1, requested, out.note);
    return out;
  }
  for (std::size_t p = 1; p < n; ++p) {
    if (figs[p]->method == figs[0]->method && figs[p]->cold == figs[0]->cold) continue;
    figure out = counted(*figs[0]);
    out.valid = false;
    out.note = fmt::format("not pooled: process {} of {} took it by {}{}, process 1 by {}{}", p + 1,
                           requested, figs[p]->method, figs[p]->cold ? "" : " (warm)",
                           figs[0]->method, figs[0]->cold ? "" : " (warm)");
    flags.push_back(
        {"method_mismatch", "error",
         fmt::format("{} {} figure: {}", side, measure::to_string(out.kind), out.note)});
    return out;
  }
  figure out = counted(*figs[0]);
  out.samples_us.clear();
  out.samples_set.clear();
  out.samples_process.clear();
  out.process_medians_us.clear();
  for (std::size_t p = 0; p < n; ++p) {
    const figure& f = *figs[p];
    out.samples_us.insert(out.samples_us.end(), f.samples_us.begin(), f.samples_us.end());
    for (std::size_t i = 0; i < f.samples_us.size(); ++i) {
      const std::uint32_t set = i < f.samples_set.size() ? f.samples_set[i] : 0u;
      out.samples_set.push_back(static_cast<std::uint32_t>(p * sets) + set);
      out.samples_process.push_back(static_cast<std::uint32_t>(p));
    }
    out.process_medians_us.push_back(f.summary.median);
  }
  out.summary = stats::summarize(out.samples_us);
  out.cpu_wait_share_pct =
      every_read ? measure::cpu_wait_share(out) : std::numeric_limits<double>::quiet_NaN();
  const auto g =
      stats::median_rse_by_group(out.samples_us, out.samples_set, measure::rse_resamples);
  out.rse_samples_pct = g.samples_pct;
  out.rse_sets_pct = g.groups_pct;
  out.rse_processes_pct = processes_rse_pct(out);
  out.summary.rse_pct = largest({g.samples_pct, g.groups_pct, out.rse_processes_pct});
  out.set_medians_us = stats::group_medians(out.samples_us, out.samples_set, n * sets);
  out.noisy = out.summary.n < o.min_samples || !(out.summary.rse_pct < o.target_rse_pct);
  // Processes far apart: the pooled median weighs each by its samples, and within a time budget
  // a slow process takes fewer, so the pooled figure leans to the fast ones (a candidate 5 ms
  // slower per call from its second process on read 0.96x pooled, its processes 1.00, 0.25 and
  // 0.25x), with no more said than a noisy figure. Said where the slowest process's median is
  // more than 1.5 times the fastest's.
  const auto [fastest, slowest] =
      std::minmax_element(out.process_medians_us.begin(), out.process_medians_us.end());
  if (*fastest > 0.0 && *slowest > k_processes_apart * *fastest) {
    std::string each;
    for (std::size_t p = 0; p < n; ++p)
      each += fmt::format("{}{:.4g} us ({} samples)", p == 0 ? "" : ", ", out.process_medians_us[p],
                          figs[p]->summary.n);
    flags.push_back(
        {"processes_disagree", "warning",
         fmt::format(
             "{} {} figure: the processes' medians are {}: the slowest {:.3g} times the "
             "fastest; the pooled median ({:.4g} us) weighs each process by its samples, so "
             "it leans to the processes that took more (within a time budget, the "
             "faster ones)",
             side, measure::to_string(out.kind), each, *slowest / *fastest, out.summary.median)});
  }
  out.note = method_note(figs[0]->note);
  if (out.noisy) {
    if (!out.note.empty()) out.note += "; ";
    out.note += fmt::format(
        "across {} processes: {}% relative error of the median with {} samples (target "
        "{:.3g}%, at least {}): {:.3g}% over the samples, {:.3g}% over the input sets, {:.3g}% "
        "over the processes' medians",
        n, figure_beside(out.summary.rse_pct, o.target_rse_pct), out.summary.n, o.target_rse_pct,
        o.min_samples, g.samples_pct, g.groups_pct, out.rse_processes_pct);
  }
  return out;
}

/** The speedup of one figure kind from the pooled figures: the pooled medians' ratio with the
 *  bootstrap over every process's sets, widened to cover a t interval around that ratio from
 *  the spread of the processes' own ratios (their standard deviation, on a log scale, times the
 *  square root of the larger side's squared shares, as processes_rse_pct weighs them). */
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
  const double shares = std::max(squared_shares(ref), squared_shares(cand));
  const double half =
      stats::student_t_quantile(0.5 + o.confidence / 2.0, static_cast<double>(logs.size()) - 1.0) *
      stats::summarize(logs).stddev * std::sqrt(shares);
  const double centre = std::log(s.ci.ratio);
  s.ci.lo = std::min(s.ci.lo, std::exp(centre - half));
  s.ci.hi = std::max(s.ci.hi, std::exp(centre + half));
  s.ci.by_process = true;
  return s;
}

/** The SM clocks of every process that read them: the first such process's record (source,
 *  default and maximum), the median of their medians, the lowest minimum and every throttle
 *  reason seen; the first process's record (why not) where none read them. */
measure::clock_record pool_clocks(const std::vector<eval_result>& runs) {
  const auto first = std::find_if(runs.begin(), runs.end(),
                                  [](const eval_result& r) { return r.timing->clocks.available; });
  if (first == runs.end()) return runs[0].timing->clocks;
  measure::clock_record out = first->timing->clocks;
  std::vector<double> medians;
  for (const auto& r : runs) {
    const auto& c = r.timing->clocks;
    if (!c.available) continue;
    if (c.median_sm_mhz > 0) medians.push_back(c.median_sm_mhz);
    if (c.min_sm_mhz > 0)
      out.min_sm_mhz = out.min_sm_mhz > 0 ? std::min(out.min_sm_mhz, c.min_sm_mhz) : c.min_sm_mhz;
    for (const auto& reason : c.throttle_reasons)
      if (std::find(out.throttle_reasons.begin(), out.throttle_reasons.end(), reason) ==
          out.throttle_reasons.end())
        out.throttle_reasons.push_back(reason);
  }
  if (!medians.empty()) out.median_sm_mhz = stats::median(medians);
  return out;
}

measure::comparison pool_timing(const std::vector<eval_result>& runs, std::size_t requested,
                                const measure::timing_options& o, std::vector<flag>& flags) {
  const std::size_t n = runs.size();
  measure::comparison out = *runs[0].timing;
  out.processes = n;
  std::size_t sets = 0;
  for (const auto& r : runs)
    sets = std::max({sets, r.timing->reference.input_sets, r.timing->candidate.input_sets});
  for (auto side : {&measure::comparison::reference, &measure::comparison::candidate}) {
    measure::side_result& s = out.*side;
    s.spent_s = 0;
    s.checks_s = 0;
    s.cpu_wait_s = 0;
    for (auto fig : {&measure::side_result::device, &measure::side_result::stream,
                     &measure::side_result::host_wall}) {
      std::vector<const figure*> figs;
      for (const auto& r : runs) figs.push_back(&((*r.timing).*side.*fig));
      s.*fig = pool_figure(figs, sets, requested, s.name, o, flags);
    }
    for (const auto& r : runs) {
      s.spent_s += ((*r.timing).*side).spent_s;
      s.checks_s += ((*r.timing).*side).checks_s;
      s.cpu_wait_s += ((*r.timing).*side).cpu_wait_s;
      s.host_sync_detected = s.host_sync_detected || ((*r.timing).*side).host_sync_detected;
    }
  }
  out.clocks = pool_clocks(runs);
  // Checked only where every process read its waits (the first unread one says why).
  for (const auto& r : runs)
    if (!r.timing->cpu_wait.checked) {
      out.cpu_wait = r.timing->cpu_wait;
      break;
    }
  for (const auto& r : runs)
    if (r.timing->stopped_by != out.stopped_by) out.stopped_by = "mixed";
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

bool stop_if_files_changed(const eval_result& first, eval_result& later) {
  const auto changed = [&](const file_info& a, const file_info& b, std::string_view what) {
    if (a.sha256 == b.sha256) return false;
    later.status = eval_status::runtime_error;
    later.message = fmt::format(
        "the {} file {} changed after process 1 started (sha256 {} then, {} now): the processes "
        "would judge different code; counted as the candidate's, whose code ran in between (a "
        "file edited by hand during the run reads the same)",
        what, b.path, a.sha256.empty() ? "unreadable" : a.sha256.substr(0, 16),
        b.sha256.empty() ? "unreadable" : b.sha256.substr(0, 16));
    later.timing.reset();
    return true;
  };
  return changed(first.problem, later.problem, "problem") ||
         changed(first.candidate, later.candidate, "candidate");
}

eval_result combine_runs(std::vector<eval_result> runs, std::size_t requested,
                         const measure::timing_options& options) {
  KJ_EXPECTS(!runs.empty());
  if (requested <= 1) return std::move(runs.front());
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
    out.message = fmt::format("process {} of {}: {}", p + 1, requested, out.message);
    out.runs = std::move(entries);
    out.wall_s = wall;
    return out;
  }
  const bool timed = std::all_of(runs.begin(), runs.end(),
                                 [](const eval_result& r) { return r.timing.has_value(); });
  eval_result out = runs[0];
  out.runs = std::move(entries);
  out.wall_s = wall;
  if (!timed || n < 2) return out;
  std::vector<flag> pooling;
  out.timing = pool_timing(runs, requested, options, pooling);
  // Flags: each distinct one once, in the order first raised, naming the processes that raised
  // it where not all did; those the timing checks make from a figure's numbers (noisy,
  // throttled samples, samples that waited for a CPU, very fast) from the pooled figures
  // instead of any process's.
  std::vector<std::pair<flag, std::vector<std::size_t>>> distinct;
  for (std::size_t p = 0; p < n; ++p)
    for (const auto& f : runs[p].flags) {
      if (f.code == "noisy_timing" || f.code == "throttled_samples" ||
          f.code == "cpu_wait_samples" || f.code == "very_fast")
        continue;
      const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) {
        return d.first.code == f.code && d.first.message == f.message;
      });
      if (same == distinct.end())
        distinct.push_back({f, {p}});
      else if (same->second.back() != p)
        same->second.push_back(p);
    }
  std::vector<flag> flags;
  for (auto& [f, who] : distinct) {
    if (who.size() < n) {
      std::string names;
      for (const std::size_t p : who) names += (names.empty() ? "" : ", ") + std::to_string(p + 1);
      f.message = fmt::format("process{} {} of {}: {}", who.size() > 1 ? "es" : "", names,
                              requested, f.message);
    }
    flags.push_back(std::move(f));
  }
  for (auto& f : pooling) flags.push_back(std::move(f));
  // The timing checks again, on the pooled figures (but the memory floor, which needs the device:
  // every process's candidate passed it, and a pooled median lies between theirs); a flag the
  // processes raised is not repeated (the pooled host_sync_detected is any process's: its flag
  // is already there, naming the processes where not all raised it).
  for (auto& f : check_timing(*out.timing, nullptr, 0))
    if (std::none_of(flags.begin(), flags.end(), [&](const flag& g) {
          return g.code == f.code && g.message.ends_with(f.message);
        }))
      flags.push_back(std::move(f));
  out.flags = std::move(flags);
  return out;
}

}  // namespace kj::eval
