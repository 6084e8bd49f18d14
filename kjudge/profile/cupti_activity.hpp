#pragma once
/** @file Device records of one region, from the CUPTI activity API: every kernel, memcpy and memset
 *  the GPU executed between start() and stop(), on every stream of every context
 *  (docs/measurement-rules.md rules 10 and 17). Host API calls are not collected: a host op is not
 *  a launch.
 *
 *  The record structs are plain data and need no CUDA header; launch_summary.hpp reduces them to
 *  counts and times. Only cupti_activity.cpp includes CUPTI. Without CUPTI in the build
 *  (KJ_HAVE_CUPTI == 0), a collector is unavailable ("CUPTI not available in this build") and
 *  collects nothing. */

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/units.hpp>
#include <kjudge/profile/kernel_metrics.hpp>

struct CUstream_st;  // cudaStream_t is CUstream_st*; declared here to keep CUDA headers out

namespace kj::profile {

/** One kernel execution on the device (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL). Timestamps are
 *  CUPTI's device-synchronised clock, ns; both 0 when CUPTI could not time the kernel. */
struct kernel_record {
  std::string name;            ///< the symbol as launched (mangled for C++ kernels)
  std::string demangled_name;  ///< demangle(name)
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t stream_id = 0;  ///< CUPTI's stream id, unique within a context
  std::uint32_t correlation_id = 0;
  launch_dims grid, block;
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_bytes = 0;   ///< per block
  std::uint32_t dynamic_shared_bytes = 0;  ///< per block
  std::uint32_t graph_id = 0;              ///< 0 unless launched from a CUDA graph

  /** False when CUPTI gave no timestamps (both 0); such a kernel still counts as a launch. */
  [[nodiscard]] bool timed() const noexcept { return end_ns > start_ns; }
  /** end - start, or 0 when untimed. */
  [[nodiscard]] nanoseconds duration() const noexcept {
    return nanoseconds(timed() ? static_cast<double>(end_ns - start_ns) : 0.0);
  }
  /** The demangled name when there is one, else the symbol. */
  [[nodiscard]] const std::string& display_name() const noexcept {
    return demangled_name.empty() ? name : demangled_name;
  }
  [[nodiscard]] std::uint64_t shared_bytes() const noexcept {
    return std::uint64_t{static_shared_bytes} + dynamic_shared_bytes;
  }
};

/** What a memory record did. Copies and fills are counted apart from kernel launches. */
enum class memory_op {
  memcpy,
  memset,
};

/** Direction of a copy (CUpti_ActivityMemcpyKind, reduced); `none` for a memset. "Array" is a
 *  CUDA array (texture memory). */
enum class copy_direction {
  none,
  host_to_device,
  device_to_host,
  device_to_device,
  host_to_host,
  peer_to_peer,
  array,
  unknown,
};

/** "memcpy" / "memset"; "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "array", "unknown", "". */
[[nodiscard]] std::string_view to_string(memory_op op) noexcept;
[[nodiscard]] std::string_view to_string(copy_direction d) noexcept;

/** One memcpy or memset on the device (CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET). */
struct memory_record {
  memory_op op = memory_op::memcpy;
  copy_direction direction = copy_direction::none;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t correlation_id = 0;

  [[nodiscard]] bool timed() const noexcept { return end_ns > start_ns; }
  [[nodiscard]] nanoseconds duration() const noexcept {
    return nanoseconds(timed() ? static_cast<double>(end_ns - start_ns) : 0.0);
  }
};

/** Everything one region produced, in the order CUPTI delivered it (not necessarily launch
 *  order: sort by start_ns when order matters). */
struct activity_records {
  std::vector<kernel_record> kernels;
  std::vector<memory_record> memory_ops;
  /** Records CUPTI dropped (no buffer space): counts and times are then incomplete. */
  std::uint64_t dropped = 0;

  [[nodiscard]] std::uint64_t count(memory_op op) const noexcept {
    std::uint64_t n = 0;
    for (const auto& m : memory_ops)
      if (m.op == op) ++n;
    return n;
  }
};

/** The C++ name of a mangled symbol ("_Z3addPfS_i" -> "add(float*, float*, int)"); a name that is
 *  not an Itanium-mangled symbol (extern "C" kernels, Triton kernels) comes back unchanged. Never
 *  throws for malformed input. */
[[nodiscard]] std::string demangle(std::string_view symbol);

/** True when this build has CUPTI (KJ_HAVE_CUPTI). */
[[nodiscard]] bool cupti_built_in() noexcept;

/** CUPTI's words for a CUptiResult, with its number ("CUPTI_ERROR_UNKNOWN (999)"). */
[[nodiscard]] std::string cupti_result_text(int result);

/** Detaches CUPTI from the process (cuptiFinalize), unless an activity_collector lives: a CUPTI
 *  client that has come and gone leaves a cost on every CUDA call until then (on the H200, 10-17%
 *  on an empty kernel's launch: docs/benchmarks.md), which timing must not carry. The next
 *  collector registers its buffers again. Returns why it did not detach; empty when it did. */
[[nodiscard]] std::string detach_cupti();

/** Collects the device records of regions delimited by start() / stop().
 *
 *  CUPTI's activity API is process-wide: at most one collector may exist at a time (a second one
 *  throws kj::error(internal)). The constructor registers the buffer callbacks; start() enables the
 *  kinds CONCURRENT_KERNEL, MEMCPY and MEMSET and clears the records of any earlier region; stop()
 *  synchronises the device, disables the kinds and force-flushes (cuptiActivityFlushAll), so every
 *  record of the region is in records() when stop() returns. Records are delivered on a CUPTI
 *  thread; the store is guarded by a mutex.
 *
 *  CUPTI failures (no CUPTI in the build, no driver, another profiler already subscribed, missing
 *  permission) do not throw: the collector becomes unavailable, start() returns false and
 *  unavailable_reason() says why, so that a forward can still be evaluated without records.
 *  Calling start() twice or stop() without start() is a kjudge bug: throws kj::error(internal). */
class activity_collector {
 public:
  activity_collector();
  ~activity_collector();
  activity_collector(const activity_collector&) = delete;
  activity_collector& operator=(const activity_collector&) = delete;
  activity_collector(activity_collector&&) = delete;
  activity_collector& operator=(activity_collector&&) = delete;

  /** False when CUPTI cannot collect here; see unavailable_reason(). */
  [[nodiscard]] bool available() const noexcept;
  /** Empty when available: "CUPTI not available in this build", or the failing call and error. */
  [[nodiscard]] const std::string& unavailable_reason() const noexcept;

  /** Begins a region: clears earlier records and enables the activity kinds. Returns false (and
   *  collects nothing) when unavailable or when enabling fails. */
  [[nodiscard]] bool start();
  /** Ends the region: cudaDeviceSynchronize, disable, forced flush. Returns false when the
   *  records are incomplete (the synchronise or flush failed; unavailable_reason() says which). */
  [[nodiscard]] bool stop();
  /** True between a successful start() and stop(). */
  [[nodiscard]] bool collecting() const noexcept;

  /** A copy of the records delivered so far (complete after stop()). */
  [[nodiscard]] activity_records records() const;

  /** CUPTI's id of `stream` (as in kernel_record::stream_id), for the timed-stream check;
   *  nullptr is the legacy default stream. Empty when unavailable or CUPTI cannot map it. */
  [[nodiscard]] std::optional<std::uint32_t> stream_id(CUstream_st* stream) const;

 private:
  struct state;
  std::unique_ptr<state> m_state;
};

namespace detail {

/** Appends the parsed form of one raw CUPTI activity record (a CUpti_Activity*: the kind is its
 *  first field) to `into`. Kinds other than CONCURRENT_KERNEL, KERNEL, MEMCPY and MEMSET are
 *  ignored. Returns true when the record was kept. Exposed for tests; without CUPTI in the build
 *  it keeps nothing. */
bool append_record(const void* record, activity_records& into);

}  // namespace detail

}  // namespace kj::profile
