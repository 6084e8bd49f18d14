#pragma once
/** @file What the timing engine times: one side of a comparison (the reference or the candidate).
 *  The engine never knows whether a target is a PyTorch module or a native kernel. */

#include <cstddef>
#include <string>

namespace kj::measure {

class target {
 public:
  virtual ~target() = default;
  /** Makes input set set_of(sample_index) current for the next run(), rewritten for that
   *  number (the engine numbers a side's prepares in increasing order from 0, skipping ahead
   *  between rounds so that every figure steps through every set; it may repeat the last number
   *  to run that sample's set again). Called outside any timed region; may enqueue work on the
   *  stream (the engine synchronises afterwards). */
  virtual void prepare(std::size_t sample_index) = 0;
  /** Issues one forward on the timing stream. May block when the forward synchronises with the
   *  host (the engine detects that). Throws on failure (e.g. a CUDA error in the candidate). */
  virtual void run() = 0;
  /** Called by the engine right after each run() or run_graph() has been timed (its clock read,
   *  its work synchronised), before anything else: a target that keeps what a call returned
   *  (a Python candidate's audits) takes it here, before code that was not timed can change it.
   *  Its time goes to take_check_seconds(). */
  virtual void after_run() {}
  /** Captures one forward of every input set in a CUDA graph, for the device figure. Returns ""
   *  when every set has its graph, else why the target cannot be captured (the forward waits for
   *  the host, a library refuses capture, ...), having kept none. Called once, outside timed
   *  regions; run() stays usable. */
  [[nodiscard]] virtual std::string capture_graphs() {
    return "this kind of target has no graph capture";
  }
  /** Replays the graph of the input set the last prepare() chose, on the timing stream. Only
   *  after capture_graphs() returned "". Throws on failure. */
  virtual void run_graph() {}
  /** Frees the captured graphs (the other side could not be captured). */
  virtual void drop_graphs() {}
  /** Number of distinct input sets available for rotation (>= 1). */
  [[nodiscard]] virtual std::size_t input_sets() const = 0;
  /** The input set prepare(sample_index) makes current: the number's own by default. (The
   *  judge's reference runs a number on another set than the candidate does: bridge.cpp.) */
  [[nodiscard]] virtual std::size_t set_of(std::size_t sample_index) const {
    const std::size_t sets = input_sets();
    return sets == 0 ? 0 : sample_index % sets;
  }
  [[nodiscard]] virtual std::string name() const = 0;
  /** Seconds this target's calls spent on kjudge's own checks since the last call of this
   *  (a Python candidate's audit: the copy of a drawn call's outputs, made in after_run()).
   *  The engine leaves them out of the side's budget, as it does
   *  a device sample that timed out: they are not the side's sampling. */
  [[nodiscard]] virtual double take_check_seconds() { return 0.0; }
};

}  // namespace kj::measure
