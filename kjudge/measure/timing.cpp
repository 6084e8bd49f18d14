#include <kjudge/measure/timing.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/check.hpp>
#include <kjudge/measure/clock_monitor.hpp>
#include <kjudge/measure/side_sampler.hpp>

namespace kj::measure {

// to_string(figure_kind) lives in kjudge/core/result.cpp with the rest of the result's names.

namespace {

using detail::gpu_tools;
using detail::round_samples;
using detail::side_role;
using detail::side_sampler;

/** The figures of a side that are still sampled and judged by the stopping rule. */
std::vector<const figure*> active_figures(const side_sampler& s, bool gpu) {
  std::vector<const figure*> out;
  const side_result& r = s.result();
  if (gpu && r.device.valid) out.push_back(&r.device);
  if (gpu && r.stream.valid) out.push_back(&r.stream);
  if (r.host_wall.valid) out.push_back(&r.host_wall);
  return out;
}

bool noise_target_met(const std::vector<side_sampler*>& sides, const timing_options& o) {
  for (const side_sampler* s : sides) {
    if (s->spent() < o.min_time) return false;
    for (const figure* f : active_figures(*s, o.gpu)) {
      if (f->samples_us.size() < std::max<std::size_t>(o.min_samples, 2)) return false;
      // One sort for both errors; the sets are resampled only when the samples' error passes.
      if (!(detail::median_rse(*f, o.target_rse_pct).total_pct < o.target_rse_pct)) return false;
    }
  }
  return true;
}

bool max_samples_reached(const std::vector<side_sampler*>& sides, const timing_options& o) {
  for (const side_sampler* s : sides) {
    for (const figure* f : active_figures(*s, o.gpu)) {
      if (f->samples_us.size() < o.max_samples) return false;
    }
  }
  return true;
}

bool budget_spent(const std::vector<side_sampler*>& sides, const timing_options& o) {
  return std::any_of(sides.begin(), sides.end(),
                     [&](const side_sampler* s) { return s->spent() > o.budget_per_side; });
}

/** Per-run CUDA state: made current on the device, the engine's own kernels loaded. */
std::unique_ptr<gpu_tools> make_gpu_tools(void* stream, const device_facts& device,
                                          const timing_options& o) {
  if (!o.gpu) return nullptr;
  KJ_CUDA_CHECK(cudaSetDevice(device.ordinal));
  std::size_t l2_bytes = device.l2_bytes;
  if (l2_bytes == 0 && o.cold) {
    int attr = 0;
    KJ_CUDA_CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrL2CacheSize, device.ordinal));
    l2_bytes = static_cast<std::size_t>(attr);
  }
  auto tools = std::make_unique<gpu_tools>(static_cast<cudaStream_t>(stream), l2_bytes, o.cold,
                                           o.blocking_timeout);
  // Load the blocking kernel and the memset path now (lazy module loading), outside any sample.
  tools->blocker.hold(tools->stream, o.blocking_timeout);
  tools->blocker.release();
  if (o.cold) tools->flusher.flush(tools->stream);
  KJ_CUDA_CHECK(cudaStreamSynchronize(tools->stream));
  return tools;
}

/** With options.graph_replay, asks every side for CUDA graphs of its forward: all sides replay
 *  theirs for the device figure, or (one could not be captured) none does and each device figure
 *  says why. Before warm-up, so that the warm-up runs after any capture's side effects. */
void setup_graphs(const std::vector<side_sampler*>& sides, const timing_options& o) {
  if (!o.gpu || !o.graph_replay) return;
  std::string why;
  for (side_sampler* s : sides) {
    const std::string w = s->capture_graphs();
    if (!w.empty()) {
      why = fmt::format("{}: {}", s->result().name, w);
      break;
    }
  }
  for (side_sampler* s : sides) {
    if (why.empty()) {
      s->use_graphs();
    } else {
      s->skip_graphs(why);
    }
  }
}

/** The sampling loop shared by time_pair and time_single. `sides` has one or two entries; with
 *  two, their order alternates every round (A B, B A, ...) so drift and order effects hit both.
 *  Returns what stopped it. */
std::string sample(const std::vector<side_sampler*>& sides, detail::clock_monitor& clocks,
                   const timing_options& o) {
  setup_graphs(sides, o);
  for (side_sampler* s : sides) s->warm_up();

  std::size_t round = 0;
  std::size_t next_noise_check = 0;
  // The noise rule's own time is nobody's budget: it is kept under a twentieth of the loop's.
  const auto loop_start = std::chrono::steady_clock::now();
  std::chrono::duration<double> checking{0.0};
  std::vector<round_samples> taken(sides.size());
  for (;; ++round) {
    bool throttled = false;
    for (std::size_t i = 0; i < sides.size(); ++i) {
      // Even rounds go 0, 1; odd rounds 1, 0.
      const std::size_t k = (round % 2 == 0) ? i : sides.size() - 1 - i;
      taken[k] = sides[k]->take_round();
      // Right after the side's last synchronisation, while the clock still reflects its work.
      if (const auto mhz = clocks.read(); mhz && clocks.throttled(*mhz, o.throttle_fraction)) {
        throttled = true;
      }
    }
    for (std::size_t k = 0; k < sides.size(); ++k) {
      if (throttled) {
        sides[k]->discard_throttled(taken[k]);
      } else {
        sides[k]->keep(taken[k]);
      }
    }

    // The noise rule sorts every figure's samples and resamples their sets; check it every round
    // at first, then about 22 times per doubling of the sample count (every round / 32 rounds),
    // so a long run stays O(n log^2 n), and never while its checks have taken more than a
    // twentieth of the loop's time (a --precise run to 100,000 samples would otherwise spend
    // seconds in them, 26 ms a figure a check at the end).
    const auto now = std::chrono::steady_clock::now();
    if (round >= next_noise_check && checking < (now - loop_start) / 20) {
      next_noise_check = round + std::max<std::size_t>(1, round / 32);
      const bool met = noise_target_met(sides, o);
      checking += std::chrono::steady_clock::now() - now;
      if (met) return "noise-target";
    }
    if (max_samples_reached(sides, o)) return "max-samples";
    if (budget_spent(sides, o)) return "budget";
    if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) return "time-limit";
  }
}

/** Whose waits for a CPU count: on the CPU every thread's (torch's intra-op threads do a
 *  forward's work beside the caller's), on a GPU the timing thread's, which issues the work and
 *  waits for it (one read a sample, not one a thread). */
detail::cpu_wait_monitor::scope wait_scope(const timing_options& o) {
  return o.gpu ? detail::cpu_wait_monitor::scope::this_thread
               : detail::cpu_wait_monitor::scope::process;
}

cpu_wait_record wait_record(const detail::cpu_wait_monitor& m) {
  cpu_wait_record r;
  r.checked = m.available();
  if (r.checked)
    r.scope =
        m.whose() == detail::cpu_wait_monitor::scope::process ? "worker threads" : "timing thread";
  else
    r.note = m.unavailable_reason();
  return r;
}

detail::clock_monitor make_clock_monitor(const device_facts& device, const timing_options& o) {
  if (!o.gpu) return detail::clock_monitor::unavailable("not recorded: GPU timing is off");
  return detail::clock_monitor(device.ordinal);
}

}  // namespace

comparison time_pair(target& reference, target& candidate, void* stream, const device_facts& device,
                     const timing_options& options) {
  const std::unique_ptr<gpu_tools> gpu = make_gpu_tools(stream, device, options);
  detail::clock_monitor clocks = make_clock_monitor(device, options);
  detail::cpu_wait_monitor waits(wait_scope(options));
  detail::turn_state turns;
  if (waits.available()) turns.cpu_wait = &waits;
  side_sampler ref(reference, side_role::reference, options, gpu.get(), turns);
  side_sampler cand(candidate, side_role::candidate, options, gpu.get(), turns);

  comparison out;
  out.stopped_by = sample({&ref, &cand}, clocks, options);
  // One side's budget stops both (the rounds stay interleaved): a noisy figure of the side whose
  // budget was left says whose ran out.
  const auto stopped_for = [&](const side_sampler& s, const char* other) {
    if (out.stopped_by == "time-limit") return std::string("the evaluation's time limit");
    if (out.stopped_by != "budget" || s.spent() > options.budget_per_side) return out.stopped_by;
    return fmt::format("the {}'s budget", other);
  };
  ref.finish(stopped_for(ref, "candidate"));
  cand.finish(stopped_for(cand, "reference"));
  out.reference = std::move(ref.result());
  out.candidate = std::move(cand.result());
  out.clocks = clocks.record();
  out.cpu_wait = wait_record(waits);
  out.interleaved = true;
  out.l2_flush_bytes = gpu != nullptr ? gpu->flusher.bytes() : 0;

  const std::array<std::pair<const figure*, const figure*>, 3> pairs{{
      {&out.reference.device, &out.candidate.device},
      {&out.reference.stream, &out.candidate.stream},
      {&out.reference.host_wall, &out.candidate.host_wall},
  }};
  for (const auto& [r, c] : pairs) {
    if (!r->valid || !c->valid) continue;
    speedup s;
    s.kind = r->kind;
    s.ci = stats::bootstrap_ratio_of_medians_by_group(r->samples_us, r->samples_set, c->samples_us,
                                                      c->samples_set, options.bootstrap_resamples,
                                                      options.confidence);
    s.valid = s.ci.ratio > 0;
    if (std::min(r->samples_us.size(), c->samples_us.size()) < 2) {
      // A side of one sample (a forward longer than the budget): a ratio, but no interval.
      s.ci.lo = s.ci.hi = std::numeric_limits<double>::quiet_NaN();
      s.ci.resamples = 0;
    }
    out.speedups.push_back(s);
  }
  return out;
}

side_result time_single(target& t, void* stream, const device_facts& device,
                        const timing_options& options) {
  const std::unique_ptr<gpu_tools> gpu = make_gpu_tools(stream, device, options);
  detail::clock_monitor clocks = make_clock_monitor(device, options);
  detail::cpu_wait_monitor waits(wait_scope(options));
  detail::turn_state turns;
  if (waits.available()) turns.cpu_wait = &waits;
  side_sampler side(t, side_role::single, options, gpu.get(), turns);
  const std::string stopped_by = sample({&side}, clocks, options);
  side.finish(stopped_by);
  return std::move(side.result());
}

}  // namespace kj::measure
