#pragma once
/** @file One forward of each side under CUPTI (docs/measurement-rules.md rules 10, 17, 18): after
 *  the timing samples, each side runs once more on input set 0 with the L2 flushed, between two
 *  events on the timed stream, while the activity collector records every kernel, copy and fill on
 *  the device. The records, the event time and the memory figures become a profile::cupti_forward,
 *  which the worker sends in every GPU evaluation (result field `launches`). */

#include <cstdint>
#include <optional>
#include <string>

#include <kjudge/core/units.hpp>
#include <kjudge/measure/l2_flush.hpp>
#include <kjudge/measure/target.hpp>
#include <kjudge/profile/cupti_activity.hpp>
#include <kjudge/profile/report.hpp>
#include <kjudge/python/bridge.hpp>

namespace kj::eval {

/** What record_forward() needs besides the target. */
struct forward_context {
  python::session* session = nullptr;  ///< allocator statistics
  void* stream = nullptr;              ///< the timed stream (cudaStream_t)
  /** Evicts the L2 before the forward (one buffer for both sides); nullptr: no flush. */
  measure::detail::l2_flusher* flusher = nullptr;
  /** Invariant 10's lower bound: bytes of outputs the forward allocates (0 for a native
   *  candidate, whose outputs kjudge allocates beforehand). */
  std::uint64_t output_bytes = 0;
  std::uint64_t device_memory_bytes = 0;
  bool cuda_side = true;  ///< the side claims to run on the GPU (invariant 11)
};

/** How long the recorded forward may take to be queued behind the blocking kernel. */
inline constexpr milliseconds forward_block_timeout{1000.0};

/** Removes the blocking kernel's own record: the first launch of the recording (launched just
 *  before the region starts), never a later kernel of the same name. */
void drop_blocking_kernel(profile::activity_records& records);

/** The kernel records as the report lists them: start (launch) order, untimed ones last,
 *  demangled names. */
[[nodiscard]] std::vector<profile::timed_kernel> timed_kernels(
    const profile::activity_records& records);

/** Runs `t` once (input set 0) under `collector`; nullopt with `why` set when CUPTI cannot
 *  collect. Throws what the target throws (a candidate failing here fails the evaluation as in
 *  timing). */
[[nodiscard]] std::optional<profile::cupti_forward> record_forward(
    measure::target& t, const forward_context& ctx, profile::activity_collector& collector,
    std::string& why);

}  // namespace kj::eval
