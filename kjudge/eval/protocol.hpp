#pragma once
/** @file The worker's event channel. The worker writes one JSON object per line on a dedicated
 *  pipe (not stdout, which belongs to the candidate), flushing each, so everything sent before a
 *  crash reaches the orchestrator. The orchestrator folds the events into an eval_result. */

#include <array>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/result.hpp>

namespace kj::eval {

/** The fd the orchestrator hands the worker for events. */
inline constexpr int channel_fd = 3;

class event_writer {
 public:
  /** Takes over `fd`: moves it to a high descriptor (close-on-exec) and closes the original, so
   *  a candidate that writes to fd 3 cannot forge events by accident. */
  explicit event_writer(int fd);
  ~event_writer();
  event_writer(const event_writer&) = delete;
  event_writer& operator=(const event_writer&) = delete;

  /** Thread-safe: a line is written whole. */
  void send(const nlohmann::json& event);
  /** Marks the start of a phase, with seconds since the writer was made (phase timings). */
  void phase(std::string_view name);
  /** Time since the writer was made: since the worker started. */
  [[nodiscard]] std::chrono::duration<double> elapsed() const {
    return std::chrono::steady_clock::now() - m_start;
  }
  void flag(std::string code, std::string severity, std::string message);
  void final(eval_status status, std::string_view message);

 private:
  int m_fd = -1;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  std::mutex m_mutex;  ///< one line at a time (an import's GPU work may send from its thread)
};

/** State the orchestrator keeps while folding events. */
struct fold_state {
  std::string last_phase;
  bool final_seen = false;
  bool gpu_lock_seen = false;  ///< the worker reported its wait for the GPU's lock
  /** A phase of a candidate's forward in a trial ("trial nominal 0 candidate") began: from then
   *  on a crash in a reference phase may be the candidate's doing. */
  bool candidate_forward_seen = false;
  /** The candidate's import or a native library's loading began ("load_candidate",
   *  "load_native"): from then on the candidate's code may have written the events that
   *  follow, the final one among them. */
  bool candidate_code_seen = false;
  std::size_t malformed_lines = 0;
  std::size_t lines_after_final = 0;  ///< the worker sends nothing after its final event
  std::size_t flags_dropped = 0;      ///< distinct flags beyond k_max_event_flags
  /** phase and trial events beyond k_max_event_phases and k_max_event_trials */
  std::size_t events_dropped = 0;
  /** Events the worker sends once at most (k_once_events) seen so far, and those that came
   *  again, in order: a second one is not the worker's (the fold takes its values over the
   *  first's, and the first may be the forged one). */
  std::vector<std::string> once_seen;
  std::vector<std::string> repeated_events;
};

/** The events a worker sends once at most in an evaluation (a second final event is counted in
 *  lines_after_final). */
inline constexpr std::array<std::string_view, 6> k_once_events = {
    "weight_copy", "weight_copy_undone", "tolerance_source", "timing_inputs", "timing", "launches"};

/** Deepest nesting an event line may have (the worker's events nest a few levels). */
inline constexpr int k_max_event_depth = 64;
/** Most distinct flags a result takes from the channel (the worker raises a few dozen at most;
 *  a candidate writing flags into the channel could send millions). */
inline constexpr std::size_t k_max_event_flags = 256;
/** Most phases and trials a result takes from the channel: an evaluation has a few phases a
 *  trial and at most 100 nominal trials, the held-out one and the stress trials; a flood of
 *  well-formed lines (a candidate writing into the channel) would otherwise grow the result
 *  35 times the channel's bytes. */
inline constexpr std::size_t k_max_event_phases = 4096;
inline constexpr std::size_t k_max_event_trials = 1024;
/** Most values (numbers, strings, arrays, objects) one event line may hold: the largest the
 *  worker sends, a timing event of two sides' three figures of up to 100,000 samples each (a
 *  time and a set number a sample), holds about 1.2 million. A longer line is malformed, and its
 *  values past this many are dropped while it is read: one flat array of 50 million numbers,
 *  parsed whole, took 19 times its bytes. */
inline constexpr std::size_t k_max_event_values = 4'000'000;

/** Applies one event line to the result. Malformed lines are counted, never fatal; lines after
 *  the final event are counted and otherwise ignored. */
void apply_event_line(eval_result& result, std::string_view line, fold_state& state);

/** Recomputes result.correctness (counts, precision) from result.trials. */
void summarize_correctness(eval_result& result);

}  // namespace kj::eval
