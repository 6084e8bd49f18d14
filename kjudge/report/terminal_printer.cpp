#include <kjudge/report/terminal_printer.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/core/dtype.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/profile/format.hpp>
#include <kjudge/profile/forward_json.hpp>
#include <kjudge/profile/report.hpp>

namespace kj::report {

namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string sci(double v) {
  return fmt::format("{:.2e}", v);
}

/** A duration in microseconds with a unit that keeps 3-4 significant digits. */
std::string us(double v) {
  if (v >= 1e6) return fmt::format("{:.3f} s", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3f} ms", v / 1e3);
  return fmt::format("{:.2f} us", v);
}

std::string status_banner(eval_status s) {
  switch (s) {
    case eval_status::correct:
      return "CORRECT";
    case eval_status::incorrect:
      return "INCORRECT";
    case eval_status::compile_error:
      return "COMPILE ERROR";
    case eval_status::runtime_error:
      return "RUNTIME ERROR";
    case eval_status::crashed:
      return "CRASHED";
    case eval_status::timed_out:
      return "TIMED OUT";
    case eval_status::problem_error:
      return "PROBLEM ERROR";
    case eval_status::internal_error:
      return "INTERNAL ERROR";
  }
  return "?";
}

/** Whether an output's values were compared: its shape and dtype the reference's, and some
 *  pair of elements finite on both sides (its errors are then measured, else they are 0). */
bool values_compared(const output_check& o) {
  return o.shape_ok() && o.abs_err_count > 0;
}

/** "trial 2 of 5", "the held-out trial", "stress trial 1" where the worker's last phase was in a
 *  trial ("trial nominal 1 candidate"); empty otherwise. */
std::string trial_of_phase(const std::string& phase, std::size_t nominal_trials) {
  constexpr std::string_view prefix = "trial ";
  if (!phase.starts_with(prefix)) return {};
  const auto kind_end = phase.find(' ', prefix.size());
  if (kind_end == std::string::npos) return {};
  const std::string kind = phase.substr(prefix.size(), kind_end - prefix.size());
  const auto index_end = phase.find(' ', kind_end + 1);
  int index = 0;
  try {
    index = std::stoi(phase.substr(kind_end + 1, index_end - kind_end - 1));
  } catch (const std::exception&) {
    return {};
  }
  if (kind == "held_out") return "the held-out trial";
  if (kind == "stress") return fmt::format("stress trial {}", index + 1);
  if (kind != "nominal") return {};
  return nominal_trials > 0 ? fmt::format("trial {} of {}", index + 1, nominal_trials)
                            : fmt::format("trial {}", index + 1);
}

/** The trials part of the status line: what passed of what completed, and, when the evaluation
 *  ended inside a trial, which one; nothing when no trial ran (no "0/0 trials"). */
std::string trials_summary(const eval_result& r) {
  const auto& c = r.correctness;
  const bool verdict = r.status == eval_status::correct || r.status == eval_status::incorrect;
  const std::string stopped =
      verdict ? std::string() : trial_of_phase(r.worker.last_phase, r.prov.trial_seeds.size());
  std::string trials;
  if (c.trials > 0) {
    trials = fmt::format("{}/{} trials", c.trials_passed, c.trials);
    if (c.held_out_ran) trials += c.held_out_passed ? ", held-out passed" : ", held-out FAILED";
    if (c.stress_skipped > 0 && c.stress_skipped == c.stress_trials)
      trials += ", stress skipped";
    else if (c.stress_trials > 0)
      trials += fmt::format(
          ", stress {}/{}{}", c.stress_passed, c.stress_trials - c.stress_skipped,
          c.stress_skipped > 0 ? fmt::format(" ({} skipped)", c.stress_skipped) : std::string());
  } else if (!stopped.empty()) {
    trials = "no trial completed";
  }
  if (!stopped.empty()) trials += ", stopped in " + stopped;
  return trials;
}

void print_header(const eval_result& r, std::string& out) {
  // The paths on one line (a newline in a name split the header; the report's own pass,
  // terminal_safe, keeps line breaks).
  out += fmt::format("kjudge {}{}  {}  vs  {} ({})\n", r.kjudge_version,
                     r.prov.kjudge_commit.empty() ? "" : " (" + r.prov.kjudge_commit + ")",
                     terminal_safe_line(r.problem.path), terminal_safe_line(r.candidate.path),
                     r.candidate.kind);
  out += render_status(r);
  const auto& p = r.prov;
  if (p.gpu)
    out +=
        fmt::format("device     {} (sm_{}, {} SMs, {:.0f} MiB L2) · driver {}CUDA {} · torch {}\n",
                    p.gpu->name, p.gpu->compute_capability, p.gpu->sm_count,
                    static_cast<double>(p.gpu->l2_bytes) / (1 << 20),
                    p.gpu->driver_release ? *p.gpu->driver_release + ", " : "",
                    p.gpu->driver_version, p.torch_version);
  else
    out += fmt::format("device     {} · torch {} · python {}\n", p.device,
                       p.torch_version.empty() ? "?" : p.torch_version,
                       p.python_version.empty() ? "?" : p.python_version);
  if (r.build.attempted)
    out +=
        fmt::format("build      {}{} {} in {:.2f} s\n", r.build.tool,
                    r.build.compiler_version.empty() ? "" : " " + r.build.compiler_version,
                    r.build.ok ? (r.build.cached ? "cached," : "ok,") : "FAILED,", r.build.build_s);
  if (r.build.ok && !r.build.not_cached.empty())
    out += fmt::format("           not cached: {}\n", r.build.not_cached);
}

/** Whether a dtype name (as results carry it) is a floating-point type. */
bool is_float_name(const std::string& name) {
  const auto t = dtype_from_string(name);
  return t && is_floating(*t);
}

void print_trials(const eval_result& r, std::string& out) {
  if (r.trials.empty()) return;
  const auto& c = r.correctness;
  // Each distinct tolerance of the first trial's outputs (integer and bool outputs are exact).
  std::vector<std::string> parts;
  bool any_float = false;
  for (const auto& o : r.trials.front().outputs) {
    const bool is_float = is_float_name(o.expected_dtype);
    any_float = any_float || is_float;
    auto part = is_float ? fmt::format("atol={:g} rtol={:g}", o.atol, o.rtol)
                         : fmt::format("{} exact", o.expected_dtype);
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  std::string tol = fmt::format("{}", fmt::join(parts, ", "));
  if (any_float) tol += fmt::format(" ({})", c.tolerance_source);
  out += fmt::format("\ncorrectness  {}  weights: {}\n", tol, c.weight_copy);
  out += fmt::format("  {:<10} {:>10}  {:<34} {:>9} {:>9} {:>9}  {}\n", "trial", "seed", "inputs",
                     "max_abs", "mean_abs", "max_rel", "result");
  for (const auto& t : r.trials) {
    std::string inputs;
    for (const auto& s : t.input_shapes) inputs += (inputs.empty() ? "" : " ") + shape_str(s);
    if (inputs.size() > 34) inputs = inputs.substr(0, 31) + "...";
    // Errors of the outputs whose values were compared: a shape or dtype mismatch, or an output
    // with no finite pair (all NaN), has none (its zeros would read as an exact match).
    double max_abs = 0, mean_abs = 0, max_rel = 0;
    bool compared = false;
    for (const auto& o : t.outputs) {
      if (!values_compared(o)) continue;
      compared = true;
      max_abs = max_error(max_abs, compared_error(o.max_abs_err, o.abs_err_count));
      mean_abs = max_error(mean_abs, compared_error(o.mean_abs_err, o.abs_err_count));
      max_rel = max_error(max_rel, compared_error(o.max_rel_err, o.rel_err_count));
    }
    const std::string label = t.kind == "nominal"    ? fmt::format("{}", t.index + 1)
                              : t.kind == "held_out" ? std::string("held-out")
                                                     : fmt::format("{} {}", t.kind, t.index + 1);
    out += fmt::format("  {:<10} {:>10}  {:<34} {:>9} {:>9} {:>9}  {}\n", label, t.seed, inputs,
                       compared ? sci(max_abs) : "n/a", compared ? sci(mean_abs) : "n/a",
                       compared ? sci(max_rel) : "n/a",
                       t.skipped  ? "skipped"
                       : t.passed ? "ok"
                                  : "FAIL");
    if (!t.error.empty()) {
      const auto nl = t.error.find('\n');
      out += fmt::format("             {}\n",
                         nl == std::string::npos ? t.error : t.error.substr(0, nl));
    }
    for (const auto& o : t.outputs) {
      if (o.passed) continue;
      out += fmt::format("             output {}: {}\n", o.index, o.message);
      // Integers print as integers while a double holds them exactly (below 2^53).
      const bool integral = !is_float_name(o.expected_dtype);
      // A value JSON could not carry (an infinity, NaN) reads back as NaN: its text says which.
      // An integer's text is exact (an int64 beyond 2^53, which its double rounds).
      const auto value = [&](double v, const std::string& text) {
        if ((std::isnan(v) || integral) && !text.empty()) return text;
        return integral && std::abs(v) < 0x1p53 ? fmt::format("{:.0f}", v)
                                                : fmt::format("{:.6g}", v);
      };
      // An infinite error is null in JSON too (NaN read back): an infinity on a side makes it.
      const auto error = [](const mismatch_info& m) {
        const bool nan_side = m.expected_text == "nan" || m.actual_text == "nan";
        const bool infinite = std::isnan(m.abs_err) && !nan_side &&
                              (m.expected_text.ends_with("inf") || m.actual_text.ends_with("inf"));
        return infinite ? std::string("inf") : fmt::format("{:.3g}", m.abs_err);
      };
      for (const auto& m : o.mismatches)
        out += fmt::format("               at {} expected {} got {} (abs err {})\n",
                           shape_str(m.index), value(m.expected, m.expected_text),
                           value(m.actual, m.actual_text), error(m));
    }
  }
  const bool any_compared = std::any_of(r.trials.begin(), r.trials.end(), [](const auto& t) {
    return t.kind == "nominal" && std::any_of(t.outputs.begin(), t.outputs.end(), values_compared);
  });
  if (c.trials > 0 && !any_compared)
    out += "  precision over nominal trials: n/a (no output was compared)\n";
  else if (c.trials > 0)
    out += fmt::format(
        "  precision over nominal trials: max abs {}  mean abs {}  max rel {}  mean rel {}\n",
        sci(c.precision.max_abs_err), sci(c.precision.mean_abs_err), sci(c.precision.max_rel_err),
        sci(c.precision.mean_rel_err));
}

void print_figure_row(const char* label, const measure::figure& f, const std::string& side,
                      std::string& out) {
  if (!f.valid) {
    out += fmt::format("  {:<10} {:<10} {}\n", label, side, f.note.empty() ? "not taken" : f.note);
    return;
  }
  const auto& s = f.summary;
  // One sample says nothing of the spread: its relative error is infinite (null in JSON).
  const std::string rse = std::isfinite(s.rse_pct) ? fmt::format("{:.2f}%", s.rse_pct) : "-";
  const std::string stddev = std::isfinite(s.stddev) ? us(s.stddev) : "-";
  out += fmt::format("  {:<10} {:<10} {:>11} {:>23} {:>11} {:>10} {:>11} {:>6} {:>7}{}\n", label,
                     side, us(s.median), us(s.q1) + " - " + us(s.q3), us(s.mean), stddev, us(s.min),
                     s.n, rse, f.noisy ? " noisy" : "");
}

/** The range of each side's per-input-set device medians, when there are two sets or more. */
void print_set_medians(const measure::comparison& t, std::string& out) {
  std::string line;
  for (const auto* s : {&t.reference, &t.candidate}) {
    if (!s->device.valid) continue;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    std::size_t sets = 0;
    for (const double m : s->device.set_medians_us)
      if (std::isfinite(m)) lo = std::min(lo, m), hi = std::max(hi, m), ++sets;
    if (sets < 2 || !(s->device.summary.median > 0)) continue;
    line += fmt::format("{}{} {} - {} ({:.1f}%)", line.empty() ? "" : ", ",
                        s == &t.reference ? "reference" : "candidate", us(lo), us(hi),
                        100.0 * (hi - lo) / s->device.summary.median);
  }
  if (!line.empty())
    out += fmt::format("  device median by input set{}: {}\n",
                       t.processes > 1 ? " (every process's)" : "", line);
}

/** With --processes: each process's median of the first figure both sides have (device, else
 *  stream, else host wall). */
void print_process_medians(const measure::comparison& t, std::string& out) {
  if (t.processes < 2) return;
  for (const auto member : {&measure::side_result::device, &measure::side_result::stream,
                            &measure::side_result::host_wall}) {
    const auto& ref = t.reference.*member;
    const auto& cand = t.candidate.*member;
    if (!ref.valid || !cand.valid || ref.process_medians_us.empty()) continue;
    const auto list = [](const std::vector<double>& v) {
      std::string s;
      for (const double m : v) s += (s.empty() ? "" : ", ") + us(m);
      return s;
    };
    out += fmt::format("  {} median by process: reference {}; candidate {}\n",
                       measure::to_string(ref.kind), list(ref.process_medians_us),
                       list(cand.process_medians_us));
    return;
  }
}

/** How the device figures were taken when graph replay was asked for: replays, or why not. */
void print_device_method(const measure::comparison& t, std::string& out) {
  const measure::figure* shown = nullptr;
  for (const auto* f : {&t.reference.device, &t.candidate.device})
    if (f->valid && shown == nullptr) shown = f;
  if (shown == nullptr) return;
  if (shown->method == measure::graph_device_method) {
    out +=
        "  device figure: one CUDA graph replay of the forward per sample, queued behind a "
        "blocking kernel\n";
  } else if (shown->note.starts_with(measure::no_graph_replay_note)) {
    out += fmt::format("  device figure: {}\n", shown->note);
  }
}

void print_timing(const eval_result& r, std::string& out) {
  if (!r.timing) return;
  const auto& t = *r.timing;
  out += fmt::format(
      "\ntiming  {} L2 ({} flush), interleaved, {} input sets{}, stopped by {}\n",
      t.reference.device.cold || t.reference.host_wall.cold ? "cold" : "warm",
      t.l2_flush_bytes
          ? fmt::format("{:.0f} MiB", static_cast<double>(t.l2_flush_bytes) / (1 << 20))
          : std::string("no"),
      t.reference.input_sets,
      t.processes > 1 ? fmt::format(" in each of {} processes", t.processes) : "", t.stopped_by);
  out += fmt::format("  {:<10} {:<10} {:>11} {:>23} {:>11} {:>10} {:>11} {:>6} {:>7}\n", "figure",
                     "side", "median", "q1 - q3", "mean", "std", "min", "n", "rse");
  const std::pair<const char*, const measure::figure measure::side_result::*> figs[] = {
      {"device", &measure::side_result::device},
      {"stream", &measure::side_result::stream},
      {"host wall", &measure::side_result::host_wall}};
  for (const auto& [label, member] : figs) {
    // GPU figures on a CPU run: one line says so (below), not a row per figure. The host wall's
    // rows stay, each saying why it was withheld (the table was its header alone).
    if (member != &measure::side_result::host_wall && !(t.reference.*member).valid &&
        !(t.candidate.*member).valid && !r.prov.gpu)
      continue;
    print_figure_row(label, t.reference.*member, "reference", out);
    print_figure_row("", t.candidate.*member, "candidate", out);
  }
  if (!t.speedups.empty()) {
    // Each figure's interval resamples input sets where both sides have enough of them with
    // samples, else single samples (marked). Either way it is this run's: another process can
    // read further apart (docs/methodology.md, Timing 6).
    const auto shown = std::find_if(t.speedups.begin(), t.speedups.end(),
                                    [](const measure::speedup& s) { return s.valid; });
    const auto& first = (shown != t.speedups.end() ? *shown : t.speedups.front()).ci;
    out += fmt::format(
        "  speedup (reference median / candidate median, {:.0f}% {}):", first.confidence * 100.0,
        t.processes > 1
            ? fmt::format("CI over {} processes{} and their {}", t.processes,
                          first.by_process ? "" : " (bootstrap alone: too few process ratios)",
                          first.by_group ? "input sets" : "samples")
        : first.by_group ? std::string("bootstrap CI over this run's input sets")
                         : std::string("bootstrap CI over this run's samples"));
    // Two decimals, or three significant digits below 0.1 (a slowdown of 400x read 0.00x).
    const auto ratio = [](double v) {
      return std::abs(v) >= 0.1 || v == 0 ? fmt::format("{:.2f}", v) : fmt::format("{:.3g}", v);
    };
    // An interval's end is infinite (null in JSON, NaN read back) where too many resamples had
    // a candidate median of 0; no resamples at all means a side had one sample.
    const auto end = [&](double v) {
      return std::isfinite(v) ? ratio(v) : std::string("unbounded");
    };
    for (const auto& s : t.speedups)
      if (!s.valid)
        out += fmt::format("  {} withheld", measure::to_string(s.kind));
      else if (s.ci.resamples == 0)
        out += fmt::format("  {} {}x (no interval: one sample on a side)",
                           measure::to_string(s.kind), ratio(s.ci.ratio));
      else
        out += fmt::format(
            "  {} {}x [{}, {}]{}", measure::to_string(s.kind), ratio(s.ci.ratio), end(s.ci.lo),
            end(s.ci.hi),
            s.ci.by_group == first.by_group && s.ci.by_process == first.by_process
                ? std::string()
                : fmt::format(
                      " (over {}{})", s.ci.by_group ? "input sets" : "samples",
                      t.processes > 1 && !s.ci.by_process ? ", not widened by the processes" : ""));
    out += "\n";
  }
  print_set_medians(t, out);
  print_process_medians(t, out);
  print_device_method(t, out);
  const auto& c = t.clocks;
  if (c.available)
    out += fmt::format(
        "  SM clock during sampling: median {:.0f} MHz, min {:.0f} MHz (default {:.0f}, max "
        "{:.0f})\n",
        c.median_sm_mhz, c.min_sm_mhz, c.default_sm_mhz, c.max_sm_mhz);
  else if (r.prov.gpu)
    out += fmt::format("  SM clock not recorded ({})\n", c.source.empty() ? "unknown" : c.source);
  else
    out += "  host timing only: no GPU in this run, so no device or stream figures\n";
  out += fmt::format("  first timed call (after the trials): reference {}, candidate {}\n",
                     us(t.reference.warmup_first_call_ms * 1e3),
                     us(t.candidate.warmup_first_call_ms * 1e3));
}

void print_launch_side(const char* side, const profile::cupti_forward& f, std::string& out) {
  if (!f.launches.ok()) {
    out += fmt::format("  {:<10} {}\n", side, f.launches.failure().message);
    return;
  }
  const auto& l = f.launches.value();
  const std::string memory = profile::detail::metric_text(f.memory, [](const auto& m) {
    return "+" + profile::format_bytes(static_cast<double>(m.bytes));
  });
  out += fmt::format(
      "  {:<10} {:>4} kernel{} {:>3} memcpy {:>3} memset   kernels busy {} (sum {}), events {}   "
      "peak memory {}\n",
      side, l.kernel_launches, l.kernel_launches == 1 ? " " : "s", l.memcpy_count, l.memset_count,
      us(l.kernel_busy_time.count() / 1e3), us(l.kernel_time_sum.count() / 1e3),
      f.event_time_ns > 0 ? us(f.event_time_ns / 1e3)
                          : std::string("n/a (event_time_not_measured)"),
      memory);
  const auto top = profile::detail::cupti_kernels_by_time(f);
  for (std::size_t i = 0; i < std::min<std::size_t>(top.size(), 3); ++i)
    out += fmt::format("  {:<10}   {:>10}  {}\n", "", us(top[i]->duration_ns / 1e3),
                       profile::detail::short_kernel_name(top[i]->name, 48));
  if (top.size() > 3) out += fmt::format("  {:<10}   ({} more)\n", "", top.size() - 3);
}

/** CUPTI's view of one cold-L2 forward per side (eval_result::launches). */
void print_launches(const eval_result& r, std::string& out) {
  if (!r.launches.is_object()) return;
  out += "\nlaunches  one cold-L2 forward per side, CUPTI device records\n";
  for (const char* side : {"reference", "candidate"}) {
    if (!r.launches.contains(side)) continue;
    try {
      print_launch_side(side, profile::cupti_forward_from_json(r.launches.at(side)), out);
    } catch (const kj::error& e) {
      out += fmt::format("  {:<10} unreadable record: {}\n", side, e.message());
    }
  }
  if (auto it = r.launches.find("fusion_ratio"); it != r.launches.end()) {
    if (it->contains("value") && it->at("value").is_number())
      out += fmt::format("  fusion ratio {:.1f}x (reference launches / candidate launches)\n",
                         it->at("value").get<double>());
  }
}

void print_failure_detail(const eval_result& r, std::string& out, const terminal_options& o) {
  if (r.status == eval_status::compile_error && !r.build.log.empty()) {
    out += "\ncompiler output:\n";
    out += r.build.log;
    if (r.build.log.back() != '\n') out += '\n';
  }
  const bool failed = r.status != eval_status::correct && r.status != eval_status::incorrect &&
                      r.status != eval_status::compile_error;
  if (failed && r.message.find('\n') != std::string::npos) {
    out += "\ndetail:\n" + r.message;
    if (r.message.back() != '\n') out += '\n';
  }
  if (o.verbose && !r.worker.phases.empty()) {
    out += "\nworker phases (start, s):";
    for (const auto& p : r.worker.phases) out += fmt::format("  {} {:.2f}", p.name, p.start_s);
    out += "\n";
  }
  if ((failed || o.verbose) && !r.worker.output_tail.empty()) {
    out += fmt::format("\nworker: {} (last phase: {})\nlast output lines:\n", r.worker.outcome,
                       r.worker.last_phase.empty() ? "none" : r.worker.last_phase);
    out += r.worker.output_tail;
    if (r.worker.output_tail.back() != '\n') out += '\n';
  }
}

}  // namespace

std::string render_status(const eval_result& r) {
  std::string out;
  const std::string trials = trials_summary(r);
  out += trials.empty() ? fmt::format("status     {}\n", status_banner(r.status))
                        : fmt::format("status     {}  ({})\n", status_banner(r.status), trials);
  if (!r.message.empty()) {
    const auto nl = r.message.find('\n');
    out += fmt::format("           {}\n",
                       nl == std::string::npos ? r.message : r.message.substr(0, nl));
  }
  return out;
}

std::string render_terminal(const eval_result& r, const terminal_options& options) {
  std::string out;
  print_header(r, out);
  print_trials(r, out);
  print_timing(r, out);
  print_launches(r, out);
  if (!r.flags.empty()) {
    out += "\nflags\n";
    for (const auto& f : r.flags)
      out += fmt::format("  {} {}: {}\n",
                         f.severity == "error" ? "!!" : (f.severity == "warning" ? "! " : "- "),
                         f.code, f.message);
  }
  print_failure_detail(r, out, options);
  std::string how = r.worker.started_by == "pool" ? ", forked from the worker pool"
                    : r.worker.started_by == "exec+pool_started"
                        ? "; worker pool started for the next evaluation"
                        : "";
  if (r.worker.pool_wait_s > 0)  // 0 unless it slept waiting for a starting pool
    how += r.worker.started_by == "pool"
               ? fmt::format(", after {:.2f} s waiting for it to finish starting",
                             r.worker.pool_wait_s)
               : fmt::format(
                     "; {:.2f} s spent waiting for a starting worker pool that did not "
                     "serve it",
                     r.worker.pool_wait_s);
  // Why a pool that was there did not serve (none there is the usual first evaluation: unsaid).
  if (r.worker.started_by != "pool" && !r.worker.pool_refused.empty() &&
      r.worker.pool_refused.rfind("no pool", 0) != 0)
    how += "; worker pool not used: " + r.worker.pool_refused;
  if (!r.worker.pool_not_started.empty())
    how += "; no worker pool started: " + r.worker.pool_not_started;
  if (r.worker.gpu_lock_wait_s > 0)
    how += fmt::format(
        "; {:.2f} s waiting for another evaluation's work on the GPU{}", r.worker.gpu_lock_wait_s,
        r.worker.gpu_lock_at.starts_with("at the first GPU work") ? " " + r.worker.gpu_lock_at
                                                                  : std::string());
  if (r.worker.cpu_lock_wait_s > 0)
    how += fmt::format("; {:.2f} s waiting for another evaluation's timing on the CPU",
                       r.worker.cpu_lock_wait_s);
  // --processes: each process's own wall clock; the worker's details are the first's, or where
  // a process's verdict was not correct (the last one run), that process's.
  std::string processes;
  if (r.runs.is_array() && r.runs.size() > 1) {
    for (const auto& run : r.runs)
      processes += fmt::format("{}{:.2f}", processes.empty() ? "" : ", ", run.value("wall_s", 0.0));
    const std::string whose = r.status == eval_status::correct
                                  ? std::string("the first's")
                                  : fmt::format("process {}'s", r.runs.size());
    processes = fmt::format("{} processes: {} s; {} ", r.runs.size(), processes, whose);
  }
  out += fmt::format("\nwall {:.2f} s ({}worker {:.2f} s{})\n", r.wall_s, processes,
                     r.worker.wall_s, how);
  return out;
}

}  // namespace kj::report
