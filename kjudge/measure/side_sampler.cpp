#include <kjudge/measure/side_sampler.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/cuda/check.hpp>

namespace kj::measure::detail {

stats::grouped_rse median_rse(const figure& f, double resample_below) {
  return stats::median_rse_by_group(f.samples_us, f.samples_set, rse_resamples, resample_below);
}

std::size_t next_round_start(std::size_t first, std::size_t used, std::size_t sets) noexcept {
  if (used <= 1 || sets == 0) return first + used;
  // first + 1 is on the next set; adding whole turns of `sets` keeps that set and passes the
  // numbers this round used (first .. first + used - 1).
  return first + 1 + sets * ((used - 1 + sets - 1) / sets);
}

namespace {

using clock = std::chrono::steady_clock;

seconds since(clock::time_point t0) {
  return std::chrono::duration_cast<seconds>(clock::now() - t0);
}

const char* role_name(side_role r) noexcept {
  switch (r) {
    case side_role::reference:
      return "reference";
    case side_role::candidate:
      return "candidate";
    case side_role::single:
      return "target";
  }
  return "target";
}

figure make_figure(figure_kind kind, const timing_options& o) {
  figure f;
  f.kind = kind;
  f.cold = o.cold && o.gpu;
  f.valid = o.gpu || kind == figure_kind::host_wall;
  if (!f.valid) {
    f.note = "not taken: GPU timing is off";
    return f;
  }
  switch (kind) {
    case figure_kind::device:
      f.method = "blocking-kernel+events";
      break;
    case figure_kind::stream:
      f.method = "events-as-issued";
      break;
    case figure_kind::host_wall:
      f.method = o.gpu ? "host-steady-clock+sync" : "host-steady-clock";
      break;
  }
  return f;
}

void finish_figure(figure& f, const timing_options& o, const std::string& stopped_by,
                   std::size_t sets) {
  f.summary = stats::summarize(f.samples_us);
  f.cpu_wait_share_pct = cpu_wait_share(f);
  const stats::grouped_rse rse = median_rse(f);
  f.summary.rse_pct = rse.total_pct;
  f.rse_samples_pct = rse.samples_pct;
  f.rse_sets_pct = rse.groups_pct;
  f.set_medians_us.clear();
  if (!f.samples_us.empty())
    f.set_medians_us = stats::group_medians(f.samples_us, f.samples_set, sets);
  if (!f.valid) return;
  if (f.samples_us.empty()) {
    f.valid = false;
    f.note = f.discarded_throttled > 0 && f.discarded_cpu_wait > 0 ? k_all_discarded_note
             : f.discarded_throttled > 0                           ? k_all_throttled_note
             : f.discarded_cpu_wait > 0                            ? k_all_cpu_wait_note
                                                                   : "no samples taken";
    return;
  }
  if (stopped_by == "noise-target") return;
  if (f.summary.n < o.min_samples || !(f.summary.rse_pct < o.target_rse_pct)) {
    f.noisy = true;
    if (!f.note.empty()) f.note += "; ";  // keeps why no graph was replayed
    f.note += fmt::format(
        "stopped by {} at {}% relative error of the median with {} samples "
        "(target {:.3g}%, at least {})",
        stopped_by, figure_beside(f.summary.rse_pct, o.target_rse_pct), f.summary.n,
        o.target_rse_pct, o.min_samples);
    // Said only of a figure the error kept noisy (not one short of min_samples alone).
    if (rse.groups_pct > rse.samples_pct && !(rse.total_pct < o.target_rse_pct)) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (const double m : f.set_medians_us) {  // NaN: a set without samples
        if (std::isnan(m)) continue;
        lo = std::min(lo, m);
        hi = std::max(hi, m);
      }
      // Only where the samples alone would have met the target is it the sets that held the
      // figure above it.
      f.note += rse.samples_pct < o.target_rse_pct
                    ? fmt::format(
                          ", held above the target by the input sets' differences (set "
                          "medians {:.4g}-{:.4g} us; {:.3g}% over the samples alone), "
                          "which more samples on the same sets do not narrow",
                          lo, hi, rse.samples_pct)
                    : fmt::format(
                          "; {:.3g}% over the samples alone, more over the input "
                          "sets (set medians {:.4g}-{:.4g} us)",
                          rse.samples_pct, lo, hi);
    }
  }
}

}  // namespace

side_sampler::side_sampler(target& t, side_role role, const timing_options& options, gpu_tools* gpu,
                           turn_state& turns)
    : m_target(t), m_role(role), m_options(options), m_gpu(gpu), m_turns(turns) {
  m_result.name = t.name();
  m_result.input_sets = t.input_sets();
  m_result.device = make_figure(figure_kind::device, options);
  m_result.stream = make_figure(figure_kind::stream, options);
  m_result.host_wall = make_figure(figure_kind::host_wall, options);
}

void side_sampler::rethrow_with_side(const char* call) const {
  const std::string who = fmt::format("{} '{}' {}", role_name(m_role), m_result.name, call);
  try {
    throw;
  } catch (const kj::error& e) {
    throw kj::error(e.kind(), fmt::format("{}: {}", who, e.message()));
  } catch (const std::exception& e) {
    throw kj::error(m_role == side_role::candidate ? error_kind::candidate : error_kind::problem,
                    fmt::format("{}: {}", who, e.what()));
  } catch (...) {
    throw kj::error(m_role == side_role::candidate ? error_kind::candidate : error_kind::problem,
                    fmt::format("{}: unknown exception", who));
  }
}

void side_sampler::run_target(bool graph) {
  m_turns.last_side = this;
  try {
    if (graph) {
      m_target.run_graph();
    } else {
      m_target.run();
    }
  } catch (...) {
    rethrow_with_side(graph ? "run_graph()" : "run()");
  }
}

void side_sampler::after_target() {
  try {
    m_target.after_run();
  } catch (...) {
    rethrow_with_side("after run()");
  }
}

std::string side_sampler::capture_graphs() {
  try {
    return m_target.capture_graphs();
  } catch (...) {
    rethrow_with_side("capture_graphs()");
  }
}

void side_sampler::use_graphs() {
  m_graphs = true;
  m_result.device.method = graph_device_method;
  for (std::size_t i = 0; i < rotated_sets(); ++i) {
    prepare_next();
    run_target(true);
    synchronize("run_graph()");
    after_target();
  }
}

void side_sampler::skip_graphs(const std::string& why) {
  m_graphs = false;
  try {
    m_target.drop_graphs();
  } catch (...) {
    rethrow_with_side("drop_graphs()");
  }
  if (m_result.device.valid)
    m_result.device.note =
        fmt::format("{} ({}): the forward's own launches behind the blocking kernel",
                    no_graph_replay_note, why);
}

void side_sampler::synchronize(const char* after, bool whole_device) {
  // A fault in the target's kernels (illegal address, ...) surfaces here, at the first
  // synchronisation after its work: attribute it to the side.
  try {
    if (whole_device)
      KJ_CUDA_CHECK(cudaDeviceSynchronize());
    else
      KJ_CUDA_CHECK(cudaStreamSynchronize(m_gpu->stream));
  } catch (...) {
    rethrow_with_side(after);
  }
}

void side_sampler::prepare_input(std::size_t number) {
  try {
    m_target.prepare(number);
  } catch (...) {
    rethrow_with_side("prepare()");
  }
}

void side_sampler::prepare_next() {
  // The running number, not the set: the target rewrites set number % input_sets() with a factor
  // of its own for every number, so a set's data differs each time it comes round.
  prepare_input(m_next_input);
  m_last_input = m_next_input;
  ++m_next_input;
  if (m_gpu == nullptr) return;
  // After prepare(): its input writes would otherwise sit warm in L2.
  if (m_gpu->cold) m_gpu->flusher.flush(m_gpu->stream);
  // The whole device idle, not only the timing stream: work a forward left on a stream nothing
  // waits for would otherwise run under the next samples, of either side (and a host-wall
  // sample, which waits for the device, would take all of it that had piled up).
  synchronize("prepare()", true);
}

void side_sampler::warm_up() {
  const auto t_start = clock::now();
  std::size_t runs = 0;
  while (runs < m_options.warmup_runs || since(t_start) < m_options.warmup_min_time) {
    prepare_next();
    const auto t0 = clock::now();
    run_target();
    if (m_gpu != nullptr) synchronize("run()");
    if (runs == 0) m_result.warmup_first_call_ms = milliseconds(clock::now() - t0).count();
    after_target();
    ++runs;
  }
  m_result.warmup_runs = runs;
}

std::optional<double> side_sampler::sample_device() {
  // The stream is idle here (prepare_next synchronised). The blocking kernel holds it while the
  // host issues the forward (or its graph's replay), so start event, forward and end event then
  // run back to back on the GPU: end - start is GPU time without host submission cost.
  prepare_next();
  const auto t_hold = clock::now();
  m_gpu->blocker.hold(m_gpu->stream, m_options.blocking_timeout);
  {
    release_on_exit release(m_gpu->blocker);
    m_gpu->start.record(m_gpu->stream);
    run_target(m_graphs);
    m_gpu->end.record(m_gpu->stream);
  }
  synchronize(m_graphs ? "run_graph()" : "run()");
  after_target();
  if (m_gpu->blocker.timed_out()) {
    // The host could not finish issuing the forward while the stream was held: the forward waited
    // for the GPU (.item(), cudaDeviceSynchronize, a device-to-host copy), or issuing it took
    // longer than the timeout, or it filled the launch queue. Either way this method cannot time
    // it. Or the host stalled once (another process, memory paged out): one timeout only loses
    // its sample; a forward that waits for the GPU times out every time, and the second says so.
    // The time a timed-out sample took is the detection's, not the side's sampling: it is left
    // out of spent(), so that the two timeouts (0.4 s by default, at most once a side) do not
    // use up a short budget before the stream and host-wall figures have their samples.
    m_lost_to_timeouts += since(t_hold);
    if (++m_blocking_timeouts < 2) {
      if (!m_result.device.note.empty()) m_result.device.note += "; ";
      m_result.device.note += fmt::format(
          "a sample was lost: the blocking kernel timed out once after {:.0f} ms before the "
          "forward was issued (a stall of the host; not repeated)",
          m_options.blocking_timeout.count());
      return std::nullopt;
    }
    m_result.host_sync_detected = true;
    m_result.device.valid = false;
    m_result.device.note = fmt::format(
        "host sync in forward: the blocking kernel timed out after {:.0f} ms before the forward "
        "was issued (it waits for the GPU, e.g. .item(), cudaDeviceSynchronize or a "
        "device-to-host copy; or it issues more launches than the queue holds, or takes longer "
        "than that to issue); device figure not taken, see stream and host_wall",
        m_options.blocking_timeout.count());
    m_result.device.samples_us.clear();
    m_result.device.samples_set.clear();
    m_result.device.discarded_throttled = 0;  // no figure left for a throttle flag to name
    return std::nullopt;
  }
  const double us = microseconds(cuda::elapsed(m_gpu->start, m_gpu->end)).count();
  if (m_graphs) {
    // An untimed eager forward after the replay, so that the stream and host-wall samples that
    // follow find the host's path through the eager forward as warm as without replays (one
    // eager forward before each of them). Without it the first eager forward after a replay ran
    // slower on the H200: the reference's stream figure read 7-10% above its host wall.
    run_target();
    synchronize("run()");
    after_target();
  }
  return us;
}

double side_sampler::sample_stream(std::optional<cpu_wait_window>& wait) {
  // Events around the call as the host issues it: includes launch gaps the host causes (and so
  // the issuing thread's waits for a CPU, read around it).
  prepare_next();
  if (m_turns.cpu_wait != nullptr) m_turns.cpu_wait->start();
  m_gpu->start.record(m_gpu->stream);
  run_target();
  m_gpu->end.record(m_gpu->stream);
  synchronize("run()");
  if (m_turns.cpu_wait != nullptr) wait = m_turns.cpu_wait->end();
  after_target();
  return microseconds(cuda::elapsed(m_gpu->start, m_gpu->end)).count();
}

double side_sampler::sample_host_wall(std::optional<cpu_wait_window>& wait) {
  // What a caller waits: the call plus, on a GPU, the wait for all of its work to end: the
  // device's, not the timing stream's (work on a stream of its own that the forward never
  // joins back would be left out, and the figure would stand while the others are withheld).
  // The threads' waits for a CPU are read just outside the clock's readings.
  prepare_next();
  if (m_turns.cpu_wait != nullptr) m_turns.cpu_wait->start();
  const auto t0 = clock::now();
  run_target();
  if (m_gpu != nullptr) synchronize("run()", true);
  const auto t1 = clock::now();
  if (m_turns.cpu_wait != nullptr) wait = m_turns.cpu_wait->end();
  after_target();
  return microseconds(t1 - t0).count();
}

void side_sampler::prime() {
  // Rounds alternate the sides' order (A B, B A, ...), so without this a side's device sample
  // would follow the other side's work in one round and its own in the next. The L2 flush evicts
  // data, not what the SMs keep of the code: on the H200 the QuantVLA kernel's device samples
  // fell into two modes by round parity, 0.19-0.23 us (3%) apart, the slower after the
  // reference's kernels (bench/quantvla_phases/sample_context.cu: 0.19-0.42 us slower after a
  // kernel of 320 KiB of code than after its own forward, eagerly or by graph replay). With one
  // forward of its own first, every sample finds the side's code as a repeated call finds it (as
  // do_bench and nvbench time: the same function again, L2 flushed). The last sample's number
  // prepared again: the same set and rewrite, whose data the side has seen, and the side's own
  // state restored (a PyTorch side's prepare() puts back its torch settings, which the other
  // side's may have replaced); the sample after it still gets a new rewrite. The CPU's caches
  // keep code too: on a 2-core machine a PyTorch `x * 2` of 8 floats read its host wall 11%
  // slower after the other side's forward (4.67 against 5.20 us by round parity, both sides).
  prepare_input(m_last_input);
  run_target();
  if (m_gpu != nullptr) synchronize("run()");
  after_target();
}

round_samples side_sampler::take_round() {
  (void)m_target.take_check_seconds();  // checks outside the rounds (the warm-up's) count nowhere
  const auto t_start = clock::now();
  round_samples r;
  if (m_turns.last_side != this) prime();
  const std::size_t first = m_next_input;
  if (device_active()) {
    r.device_set = next_set();
    r.device_us = sample_device();
  }
  if (m_gpu != nullptr) {
    r.stream_set = next_set();
    r.stream_us = sample_stream(r.stream_wait);
  }
  r.host_wall_set = next_set();
  r.host_wall_us = sample_host_wall(r.host_wall_wait);
  // A round takes a sample of each figure, each on the next number. The next round starts one
  // set further on from this round's first (on a number not used yet), so that every figure
  // steps through every set: stepping by the three samples of a GPU round, a figure saw one set
  // of three and two of six (and with two samples a round, after host-sync detection, half of an
  // even number of sets).
  m_next_input = next_round_start(first, m_next_input - first, rotated_sets());
  const seconds checks{m_target.take_check_seconds()};
  m_checks += checks;
  m_last_round = since(t_start) - m_lost_to_timeouts - checks;
  m_spent += m_last_round;
  m_lost_to_timeouts = seconds{0.0};
  return r;
}

void side_sampler::keep(const round_samples& r) {
  const auto add = [](figure& f, double us, std::uint32_t set) {
    f.samples_us.push_back(us);
    f.samples_set.push_back(set);
  };
  // A host-timed sample is kept unless its threads waited for a CPU that others had
  // (waited_for_cpu); the longest wait of each kind is kept for the result (a kept sample's says
  // how clean the figure is). Only the reference's (and a lone target's) samples are discarded:
  // the candidate's code runs in this process and can make its own threads wait (children it
  // lets run, threads it pins together), so discards of its samples would be its to choose.
  // Its waits stay in its figure, which they can only slow, and are said (cpu_wait_share_pct).
  const bool may_discard = m_role != side_role::candidate;
  // Returns whether the sample was kept.
  const auto add_host = [&](figure& f, double us, std::uint32_t set,
                            const std::optional<cpu_wait_window>& w) {
    if (w && may_discard && waited_for_cpu(us, *w, m_turns.cpu_wait->cpus())) {
      ++f.discarded_cpu_wait;
      f.discarded_cpu_wait_max_us = std::max(f.discarded_cpu_wait_max_us, w->wait_us);
      return false;
    }
    if (w) {
      // Linux books a thread's wait when the thread next runs, so a wait that began before the
      // sample can land in it whole: a kept sample's is counted up to the sample's own length
      // (the kept share read 117% for a candidate whose threads took turns with busy ones).
      const double waited = std::min(w->wait_us, us);
      f.cpu_wait_max_us =
          std::isnan(f.cpu_wait_max_us) ? waited : std::max(f.cpu_wait_max_us, waited);
      f.cpu_wait_total_us += waited;
    }
    add(f, us, set);
    return true;
  };
  if (r.device_us && m_result.device.valid) add(m_result.device, *r.device_us, r.device_set);
  if (r.stream_us) add_host(m_result.stream, *r.stream_us, r.stream_set, r.stream_wait);
  const bool wall_discarded = r.host_wall_us && !add_host(m_result.host_wall, *r.host_wall_us,
                                                          r.host_wall_set, r.host_wall_wait);
  // On the CPU a round is its one host-wall sample: one that waited for a CPU is left out of the
  // budget, up to cpu_wait_budget_factor budgets, so that a machine busy by turns still gives
  // the figure its clean samples (the time limit still ends the loop).
  const seconds most = m_options.budget_per_side * cpu_wait_budget_factor;
  if (m_gpu == nullptr && wall_discarded && m_waits_unbudgeted + m_last_round <= most) {
    m_spent -= m_last_round;
    m_waits_unbudgeted += m_last_round;
  }
}

void side_sampler::discard_throttled(const round_samples& r) {
  if (r.device_us) ++m_result.device.discarded_throttled;
  if (r.stream_us) ++m_result.stream.discarded_throttled;
  if (r.host_wall_us) ++m_result.host_wall.discarded_throttled;
}

void side_sampler::finish(const std::string& stopped_by) {
  for (figure* f : {&m_result.device, &m_result.stream, &m_result.host_wall})
    finish_figure(*f, m_options, stopped_by, rotated_sets());
  m_result.spent_s = m_spent.count();
  m_result.cpu_wait_s = m_waits_unbudgeted.count();
  m_result.checks_s = m_checks.count();
}

}  // namespace kj::measure::detail
