#include <kjudge/eval/timing_checks.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/device/datasheet.hpp>

namespace kj::eval {

double dram_peak_bytes_per_s(const cuda::device_properties& d) noexcept {
  // The larger of the figure derived from the reported memory clock and the datasheet's: the
  // derived one undershoots on some parts (4.1 against 4.8 TB/s on an H200), and a floor set too
  // high would accuse an honest kernel.
  const double derived = 2.0 * static_cast<double>(d.memory_clock_khz) * 1e3 *
                         static_cast<double>(d.memory_bus_width_bits) / 8.0;
  const auto* sheet = device::find_by_name(d.name);
  return std::max(derived, sheet ? sheet->memory_tbps * 1e12 : 0.0);
}

namespace {

/** A figure that failed an invariant is not shown as a number: it becomes invalid, with the
 *  reason as its note, and the flag says why. */
void reject(measure::figure& f, const flag& why, std::vector<flag>& out) {
  f.valid = false;
  f.note = "failed invariant " + why.code + ": " + why.message;
  out.push_back(why);
}

/** The noisy_timing flag of a noisy figure: its note says where sampling stopped. */
flag noisy_flag(const std::string& side, const measure::figure& f) {
  return {"noisy_timing", "warning",
          fmt::format("{} {} figure is noisy: {}", side, measure::to_string(f.kind),
                      f.note.empty() ? fmt::format("relative standard error {:.2f}% after {} "
                                                   "samples",
                                                   f.summary.rse_pct, f.summary.n)
                                     : f.note)};
}

/** A wait for a CPU, in the unit that reads best. */
std::string wait_text(double us) {
  return us >= 1000 ? fmt::format("{:.1f} ms", us / 1000) : fmt::format("{:.0f} us", us);
}

/** The flag of a figure whose samples' threads waited for a CPU (measure::detail::
 *  waited_for_cpu): said where 1% of its samples or more were discarded for it, or where the
 *  kept ones waited 5% of their time or more (a few such waits are usual on a machine that runs
 *  anything else; the result's counts keep them); a warning where most were discarded or none
 *  kept (no figure then), or where the kept ones waited 10% of their time or more (the figure
 *  then reads the machine's load along with the code), information otherwise. */
std::optional<flag> cpu_wait_flag(const std::string& side, const measure::figure& f) {
  const bool none_kept = !f.valid && f.samples_us.empty() &&
                         (f.note.ends_with(measure::k_all_cpu_wait_note) ||
                          f.note.ends_with(measure::k_all_discarded_note));
  const std::size_t taken = f.samples_us.size() + f.discarded_cpu_wait + f.discarded_throttled;
  const double share = f.cpu_wait_share_pct;  // NaN: not read, or nothing kept
  const bool discards =
      f.discarded_cpu_wait > 0 && (none_kept || 100 * f.discarded_cpu_wait >= taken);
  const bool kept_waited = share >= 5.0;
  if (!discards && !kept_waited) return std::nullopt;
  const bool most = 2 * f.discarded_cpu_wait > taken;
  std::vector<std::string> parts;
  if (discards)
    parts.push_back(fmt::format(
        "{} of {} samples discarded{}: their threads waited for a CPU for half of their time or "
        "more (up to {})",
        f.discarded_cpu_wait, taken, none_kept ? " (none kept: no figure)" : "",
        wait_text(f.discarded_cpu_wait_max_us)));
  if (!std::isnan(share))
    parts.push_back(
        fmt::format("the {} kept samples' threads waited for a CPU for {:.1f}% of "
                    "their time (up to {} in one){}",
                    f.samples_us.size(), share, wait_text(f.cpu_wait_max_us),
                    share >= 10.0 ? ": the figure reads the machine's load along "
                                    "with the code"
                                  : ""));
  return flag{"cpu_wait_samples", none_kept || most || share >= 10.0 ? "warning" : "info",
              fmt::format("{} {}: {} (other work held the machine's CPUs: another program or "
                          "evaluation, or threads or child processes of the worker's own, the "
                          "candidate's among them)",
                          side, measure::to_string(f.kind), fmt::join(parts, "; "))};
}

void check_side(measure::side_result& s, std::vector<flag>& out) {
  const auto& dev = s.device;
  if (dev.valid && dev.summary.n > 0) {
    if (dev.summary.median < 0.5)
      reject(s.device,
             {"impossible_time", "error",
              fmt::format("{} device median {:.3f} us is under 0.5 us, less than any kernel "
                          "takes: the figure is not trustworthy",
                          s.name, dev.summary.median)},
             out);
    else if (dev.summary.median < 2.0)
      out.push_back({"very_fast", "info",
                     fmt::format("{} device median {:.2f} us is under 2 us: review", s.name,
                                 dev.summary.median)});
  }
  // Event time <= host wall time holds per call; the two figures come from different samples, so
  // compare distributions: the stream figure's lower quartile above the host wall's upper quartile
  // cannot come from noise.
  if (s.stream.valid && s.host_wall.valid && s.stream.summary.q1 > s.host_wall.summary.q3)
    reject(s.stream,
           {"event_exceeds_wall", "error",
            fmt::format("{} stream figure (q1 {:.2f} us) lies above its host wall figure "
                        "(q3 {:.2f} us): events and host clock disagree",
                        s.name, s.stream.summary.q1, s.host_wall.summary.q3)},
           out);
  if (s.host_sync_detected)
    out.push_back({"host_sync_in_forward", "warning",
                   fmt::format("the {} forward could not be queued while its stream was held: "
                               "it waits for the host (.item(), a synchronize or a device-to-host "
                               "copy), or issues more launches than the launch queue holds, or "
                               "took longer than the hold's limit to issue: no device figure; "
                               "stream and host-wall figures include the wait",
                               s.name)});
  for (const auto* f : {&s.device, &s.stream, &s.host_wall}) {
    if (f->valid && f->noisy) out.push_back(noisy_flag(s.name, *f));
    if (f->discarded_throttled > 0) {
      // Every sample gone leaves no figure and no speedup: that is worth a warning. (A pooled
      // figure that stands for a process whose figure is missing for another reason, the
      // discards counted in the others, is not missing for this.)
      const bool none_kept = !f->valid && f->samples_us.empty() &&
                             (f->note.ends_with(measure::k_all_throttled_note) ||
                              f->note.ends_with(measure::k_all_discarded_note));
      out.push_back(
          {"throttled_samples", none_kept ? "warning" : "info",
           fmt::format(
               "{} {}: {} samples discarded{} (SM clock under the throttle limit: a fraction, "
               "0.75 unless the job sets another, of the default applications "
               "clock, or of the maximum where no default is known)",
               s.name, measure::to_string(f->kind), f->discarded_throttled,
               none_kept ? ", every one taken: no figure" : "")});
    }
    if (const auto waited = cpu_wait_flag(s.name, *f)) out.push_back(*waited);
  }
}

}  // namespace

std::vector<flag> check_timing(measure::comparison& c, const cuda::device_properties* device,
                               std::uint64_t min_bytes) {
  std::vector<flag> out;
  check_side(c.reference, out);
  check_side(c.candidate, out);
  // Invariant 12: same method and cache state on both sides.
  measure::figure* pairs[][2] = {{&c.reference.device, &c.candidate.device},
                                 {&c.reference.stream, &c.candidate.stream},
                                 {&c.reference.host_wall, &c.candidate.host_wall}};
  for (const auto& p : pairs)
    if (p[0]->valid && p[1]->valid && (p[0]->method != p[1]->method || p[0]->cold != p[1]->cold)) {
      const flag why{"method_mismatch", "error",
                     fmt::format("{} figures were taken differently for reference and candidate",
                                 measure::to_string(p[0]->kind))};
      reject(*p[0], why, out);
      p[1]->valid = false;
      p[1]->note = p[0]->note;
    }
  // Invariant 9: faster than its minimum bytes at the DRAM peak is impossible (cold L2 only).
  // Every GPU figure of the candidate is checked: the stream and host-wall figures hold its GPU
  // time too, and stand alone where the device figure is missing (a forward that waits for the
  // host) or was withheld.
  if (device && min_bytes > 0) {
    const double peak = dram_peak_bytes_per_s(*device);
    const double floor_us = peak > 0 ? static_cast<double>(min_bytes) / peak * 1e6 : 0;
    const auto under = [&](const measure::figure& f) {
      return floor_us > 1.0 && f.valid && f.cold && f.summary.n > 0 &&
             f.summary.median < 0.9 * floor_us;
    };
    // The floor assumes every input byte is read. A problem that reads part of an input (a
    // slice, an index, an input it ignores) shows it in its reference, which then runs under the
    // floor too: the bound is not the problem's, and is not applied.
    const measure::figure* reference_under = nullptr;
    for (const auto* f : {&c.reference.device, &c.reference.stream, &c.reference.host_wall})
      if (reference_under == nullptr && under(*f)) reference_under = f;
    for (auto* f : {&c.candidate.device, &c.candidate.stream, &c.candidate.host_wall}) {
      if (!under(*f)) continue;
      if (reference_under != nullptr) {
        out.push_back(
            {"memory_floor_not_applied", "info",
             fmt::format("the reference's {} median {:.2f} us is itself below {:.2f} us, the "
                         "time its inputs and outputs ({} bytes) need at the {:.0f} GB/s DRAM "
                         "peak: the problem does not read all of its inputs, and the "
                         "candidate's {:.2f} us is not checked against that floor",
                         measure::to_string(reference_under->kind), reference_under->summary.median,
                         floor_us, min_bytes, peak / 1e9, f->summary.median)});
        break;  // one note: the floor is off for every figure
      }
      reject(*f,
             {"faster_than_memory", "error",
              fmt::format("candidate {} median {:.2f} us is below {:.2f} us, the time "
                          "its {} minimum bytes need at the {:.0f} GB/s DRAM peak: it "
                          "cannot have read its inputs",
                          measure::to_string(f->kind), f->summary.median, floor_us, min_bytes,
                          peak / 1e9)},
             out);
    }
  }
  // A speedup needs both of its figures.
  for (auto& s : c.speedups)
    if (!measure::figure_of(c.reference, s.kind).valid ||
        !measure::figure_of(c.candidate, s.kind).valid)
      s.valid = false;
  return out;
}

}  // namespace kj::eval
