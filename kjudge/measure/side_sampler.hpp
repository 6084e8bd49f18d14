#pragma once
/** @file One side of a timing run: warm-up and one round of the three figures (device, stream,
 *  host wall). The loop that interleaves sides and decides when to stop is in timing.cpp. */

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include <kjudge/cuda/event.hpp>
#include <kjudge/measure/cpu_wait.hpp>
#include <kjudge/measure/l2_flush.hpp>
#include <kjudge/measure/stream_blocker.hpp>
#include <kjudge/measure/target.hpp>
#include <kjudge/measure/timing.hpp>

namespace kj::measure::detail {

/** Which side a target is; decides the error kind of a wrapped non-kjudge exception. */
enum class side_role { reference, candidate, single };

/** CUDA resources shared by both sides of one run (same stream, same device, same flush). */
struct gpu_tools {
  gpu_tools(cudaStream_t s, std::size_t l2_bytes, bool cold_cache, milliseconds timeout)
      : stream(s),
        flusher(cold_cache ? l2_bytes : 0),
        cold(cold_cache),
        blocking_timeout(timeout) {}

  cudaStream_t stream;  ///< the stream the targets issue on (not owned)
  cuda::event start, end;
  stream_blocker blocker;
  l2_flusher flusher;  ///< empty when warm
  bool cold;
  milliseconds blocking_timeout;
};

/** What the sides of one run share on the CPU as on a GPU. */
struct turn_state {
  const void* last_side = nullptr;  ///< the side_sampler whose forward was issued last
  /** Reads the host-timed samples' waits for a CPU; nullptr: not read. */
  cpu_wait_monitor* cpu_wait = nullptr;
};

/** One round's samples of one side, in microseconds; empty when a figure was not taken (or its
 *  sample was unusable). The loop keeps or discards them together (throttle check). */
struct round_samples {
  std::optional<double> device_us, stream_us, host_wall_us;
  std::uint32_t device_set = 0, stream_set = 0, host_wall_set = 0;  ///< the input set of each
  /** The threads' waits for a CPU during the stream and host-wall samples (nullopt: not read). */
  std::optional<cpu_wait_window> stream_wait, host_wall_wait;
};

using measure::rse_resamples;

/** A figure's relative standard error of its median (stats::median_rse_by_group over its input
 *  sets): the stopping rule's and the result's, computed alike; the sets resampled only when the
 *  samples' own error is under `resample_below`. */
[[nodiscard]] stats::grouped_rse median_rse(
    const figure& f, double resample_below = std::numeric_limits<double>::infinity());

/** The number the next round's first sample prepares, after a round whose first sample prepared
 *  `first` and which prepared `used` numbers (one a figure) on a target of `sets` input sets
 *  (set = number % sets): one set further on than `first`, and past every number used, so that
 *  each figure steps through every set, one a round, whatever the figures a round takes. */
[[nodiscard]] std::size_t next_round_start(std::size_t first, std::size_t used,
                                           std::size_t sets) noexcept;

class side_sampler {
 public:
  /** `gpu` is nullptr for CPU-only runs (no CUDA call is made then); `turns` is shared by the
   *  run's sides. */
  side_sampler(target& t, side_role role, const timing_options& options, gpu_tools* gpu,
               turn_state& turns);

  /** Asks the target for CUDA graphs of its forward (target::capture_graphs); "" on success. */
  [[nodiscard]] std::string capture_graphs();
  /** The device figure replays the captured graphs from now on; each set's graph is replayed
   *  once here (its upload and first launch stay out of the samples). */
  void use_graphs();
  /** The graphs are not used (`why`: the side that could not be captured, and why); the target
   *  frees any it made and the device figure notes the reason. */
  void skip_graphs(const std::string& why);
  /** Runs the target until warmup_runs calls and warmup_min_time have passed; records the first
   *  call's time. Not counted in spent(). */
  void warm_up();
  /** prime()s when the other side ran the last forward; then takes one sample of every enabled
   *  figure. Adds the round's wall time to spent(), less a device sample's whose blocking kernel
   *  timed out (at most two a side) and the target's checks (target::take_check_seconds). */
  [[nodiscard]] round_samples take_round();
  /** Appends a round's samples to the figures, but a host-timed sample whose threads waited for
   *  a CPU during it (waited_for_cpu), which is counted as discarded instead. */
  void keep(const round_samples& r);
  /** Counts a round's samples as discarded for running under a throttled clock. */
  void discard_throttled(const round_samples& r);

  /** Summaries, noisy flags and spent_s, after the loop stopped for `stopped_by`. */
  void finish(const std::string& stopped_by);

  [[nodiscard]] seconds spent() const noexcept { return m_spent; }
  /** The figures still being sampled (host-sync detection turns off the device figure). */
  [[nodiscard]] bool device_active() const noexcept {
    return m_gpu != nullptr && m_result.device.valid;
  }
  [[nodiscard]] side_result& result() noexcept { return m_result; }
  [[nodiscard]] const side_result& result() const noexcept { return m_result; }

 private:
  /** prepare(number), a failure wrapped in kj::error naming the side. */
  void prepare_input(std::size_t number);
  /** prepare() the next sample (numbered 0, 1, 2, ... over this side's samples, warm-up and graph
   *  set-up included, a round's next start skipping ahead: next_round_start(); the target
   *  rotates its input sets by it), flush L2 when cold, and wait for both. */
  void prepare_next();
  /** Waits for the stream; a CUDA error (e.g. a fault in the target's kernels) is rethrown
   *  naming the side and the call `after` which it surfaced. */
  void synchronize(const char* after, bool whole_device = false);
  /** t.run() (t.run_graph() when `graph`) with a failure wrapped in kj::error naming the side. */
  void run_target(bool graph = false);
  /** The target's after_run(), right after a timed call; a throw is the side's. */
  void after_target();
  /** The input sets the samples rotate through (a target that reports none has one). */
  [[nodiscard]] std::size_t rotated_sets() const noexcept {
    return m_result.input_sets > 0 ? m_result.input_sets : 1;
  }
  /** The input set the next prepare_next() makes current, as the target rotates them. */
  [[nodiscard]] std::uint32_t next_set() const {
    return static_cast<std::uint32_t>(m_target.set_of(m_next_input) % rotated_sets());
  }
  /** The last sample's set prepared again (its rewrite repeated, the side's state restored) and
   *  one untimed forward on it: the side's turn starts from its own work (see take_round()). */
  void prime();
  [[nodiscard]] std::optional<double> sample_device();
  /** A stream or host-wall sample; `wait` gets the threads' waits for a CPU during it. */
  [[nodiscard]] double sample_stream(std::optional<cpu_wait_window>& wait);
  [[nodiscard]] double sample_host_wall(std::optional<cpu_wait_window>& wait);
  [[noreturn]] void rethrow_with_side(const char* call) const;

  target& m_target;
  side_role m_role;
  const timing_options& m_options;
  gpu_tools* m_gpu;
  turn_state& m_turns;
  side_result m_result;
  std::size_t m_next_input = 0;  ///< the number of the next sample's prepare()
  std::size_t m_last_input = 0;  ///< the number the last prepare_next() used (prime() repeats it)
  seconds m_spent{0.0};
  bool m_graphs = false;  ///< the device figure replays the target's graphs
  /** Device samples whose blocking kernel timed out: the second declares a host sync. */
  int m_blocking_timeouts = 0;
  /** The time this round's timed-out device sample took: not counted in m_spent. */
  seconds m_lost_to_timeouts{0.0};
  /** kjudge's checks inside the rounds (target::take_check_seconds): not counted in m_spent. */
  seconds m_checks{0.0};
  /** The last round's time as counted in m_spent. */
  seconds m_last_round{0.0};
  /** CPU-only rounds whose sample waited for a CPU: taken back out of m_spent (keep()). */
  seconds m_waits_unbudgeted{0.0};
};

}  // namespace kj::measure::detail
