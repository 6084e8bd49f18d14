#include <kjudge/profile/cupti_activity.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>

#if KJ_HAVE_CUPTI
#include <cupti.h>
#endif

namespace kj::profile {

std::string_view to_string(memory_op op) noexcept {
  switch (op) {
    case memory_op::memcpy:
      return "memcpy";
    case memory_op::memset:
      return "memset";
  }
  return "unknown";
}

std::string_view to_string(copy_direction d) noexcept {
  switch (d) {
    case copy_direction::none:
      return "";
    case copy_direction::host_to_device:
      return "HtoD";
    case copy_direction::device_to_host:
      return "DtoH";
    case copy_direction::device_to_device:
      return "DtoD";
    case copy_direction::host_to_host:
      return "HtoH";
    case copy_direction::peer_to_peer:
      return "PtoP";
    case copy_direction::array:
      return "array";
    case copy_direction::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string demangle(std::string_view symbol) {
  // Only Itanium symbols: __cxa_demangle also accepts bare type encodings, and would turn a C
  // kernel named "f" into "float".
  if (symbol.size() < 3 || symbol.substr(0, 2) != "_Z") return std::string(symbol);
  const std::string owned(symbol);  // __cxa_demangle needs a terminated string
  int status = 0;
  char* out = abi::__cxa_demangle(owned.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);  // NOLINT: __cxa_demangle allocates with malloc
    return owned;
  }
  std::string result(out);
  std::free(out);  // NOLINT
  return result;
}

bool cupti_built_in() noexcept {
  return KJ_HAVE_CUPTI != 0;
}

// ----------------------------------------------------------------------------------------------
// Record parsing.

namespace {

[[maybe_unused]] std::uint32_t non_negative(std::int32_t v) noexcept {
  return v > 0 ? static_cast<std::uint32_t>(v) : 0U;
}

}  // namespace

namespace detail {

#if KJ_HAVE_CUPTI

namespace {

copy_direction direction_of(std::uint8_t copy_kind) noexcept {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return copy_direction::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return copy_direction::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return copy_direction::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return copy_direction::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return copy_direction::peer_to_peer;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return copy_direction::array;
    default:
      return copy_direction::unknown;
  }
}

}  // namespace

bool append_record(const void* record, activity_records& into) {
  if (record == nullptr) return false;
  CUpti_ActivityKind kind{};
  std::memcpy(&kind, record, sizeof kind);  // every record starts with its kind
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      // CUDA 13's record for both kernel kinds (cupti_activity.h).
      const auto& r = *static_cast<const CUpti_ActivityKernel10*>(record);
      kernel_record k;
      k.name = r.name != nullptr ? std::string(r.name) : std::string("<unnamed kernel>");
      k.demangled_name = demangle(k.name);
      k.start_ns = r.start;
      k.end_ns = r.end;
      k.device_id = r.deviceId;
      k.context_id = r.contextId;
      k.stream_id = r.streamId;
      k.correlation_id = r.correlationId;
      k.grid = {non_negative(r.gridX), non_negative(r.gridY), non_negative(r.gridZ)};
      k.block = {non_negative(r.blockX), non_negative(r.blockY), non_negative(r.blockZ)};
      k.registers_per_thread = r.registersPerThread;
      k.static_shared_bytes = non_negative(r.staticSharedMemory);
      k.dynamic_shared_bytes = non_negative(r.dynamicSharedMemory);
      k.graph_id = r.graphId;
      into.kernels.push_back(std::move(k));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& r = *static_cast<const CUpti_ActivityMemcpy6*>(record);
      memory_record m;
      m.op = memory_op::memcpy;
      m.direction = direction_of(r.copyKind);
      m.bytes = r.bytes;
      m.start_ns = r.start;
      m.end_ns = r.end;
      m.device_id = r.deviceId;
      m.context_id = r.contextId;
      m.stream_id = r.streamId;
      m.correlation_id = r.correlationId;
      into.memory_ops.push_back(m);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& r = *static_cast<const CUpti_ActivityMemset4*>(record);
      memory_record m;
      m.op = memory_op::memset;
      m.direction = copy_direction::none;
      m.bytes = r.bytes;
      m.start_ns = r.start;
      m.end_ns = r.end;
      m.device_id = r.deviceId;
      m.context_id = r.contextId;
      m.stream_id = r.streamId;
      m.correlation_id = r.correlationId;
      into.memory_ops.push_back(m);
      return true;
    }
    default:
      return false;
  }
}

#else

bool append_record(const void*, activity_records&) {
  return false;
}

#endif

}  // namespace detail

// ----------------------------------------------------------------------------------------------
// The process-wide CUPTI state and the collector.

namespace {

/** CUPTI's buffer callbacks are plain functions with no user pointer, so the store they fill is
 *  process-wide. Leaked on purpose: a CUPTI thread may deliver a buffer during static
 *  destruction. */
struct process_state {
  std::mutex mutex;
  activity_records* sink = nullptr;  ///< the live collector's store; nullptr: records dropped
  bool collector_alive = false;
  bool callbacks_registered = false;
};

process_state& global() {
  static process_state* s = new process_state;  // NOLINT: intentionally leaked, see above
  return *s;
}

[[maybe_unused]] constexpr std::size_t activity_buffer_bytes = std::size_t{4} << 20;
[[maybe_unused]] constexpr std::size_t activity_buffer_alignment = 8;  // CUPTI's record alignment

#if KJ_HAVE_CUPTI

std::string describe(CUptiResult r) {
  return cupti_result_text(static_cast<int>(r));
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  void* p = ::operator new (activity_buffer_bytes, std::align_val_t{activity_buffer_alignment},
                            std::nothrow);
  *buffer = static_cast<uint8_t*>(p);
  *size = p != nullptr ? activity_buffer_bytes : 0;  // a null buffer makes CUPTI drop records
}

void free_buffer(uint8_t* buffer) noexcept {
  ::operator delete (buffer, std::align_val_t{activity_buffer_alignment});
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  if (buffer == nullptr) return;
  try {
    activity_records parsed;  // parsed outside the lock
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS)
      detail::append_record(record, parsed);
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
      parsed.dropped = dropped;
    const std::lock_guard lock(global().mutex);
    if (activity_records* sink = global().sink) {
      for (auto& k : parsed.kernels) sink->kernels.push_back(std::move(k));
      for (auto& m : parsed.memory_ops) sink->memory_ops.push_back(m);
      sink->dropped += parsed.dropped;
    }
  } catch (...) {
    // Called from CUPTI's C code: nothing may escape. The records of this buffer are lost; count
    // at least one as dropped so that the forward's counts are flagged as incomplete.
    try {
      const std::lock_guard lock(global().mutex);
      if (activity_records* sink = global().sink) sink->dropped += 1;
    } catch (...) {
    }
  }
  free_buffer(buffer);
}

constexpr CUpti_ActivityKind collected_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

#endif

}  // namespace

struct activity_collector::state {
  bool available = false;
  bool collecting = false;
  std::string reason;
  activity_records records;  ///< written by CUPTI's thread under global().mutex
};

activity_collector::activity_collector() : m_state(std::make_unique<state>()) {
  {
    const std::lock_guard lock(global().mutex);
    if (global().collector_alive)
      KJ_THROW(error_kind::internal,
               "a second CUPTI activity collector was created while one exists (CUPTI's activity "
               "API is process-wide)");
    global().collector_alive = true;
    global().sink = &m_state->records;
  }
  try {
#if KJ_HAVE_CUPTI
    bool registered = false;
    {
      const std::lock_guard lock(global().mutex);
      registered = global().callbacks_registered;
    }
    if (!registered) {
      // Registration never calls back, so it is safe outside the lock; only one collector exists.
      const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      if (r != CUPTI_SUCCESS) {
        m_state->reason = "cuptiActivityRegisterCallbacks failed: " + describe(r);
        return;
      }
      const std::lock_guard lock(global().mutex);
      global().callbacks_registered = true;
    }
    m_state->available = true;
#else
    m_state->reason = "CUPTI not available in this build";
#endif
  } catch (...) {
    // The destructor does not run for a throwing constructor: give the slot back.
    const std::lock_guard lock(global().mutex);
    global().sink = nullptr;
    global().collector_alive = false;
    throw;
  }
}

activity_collector::~activity_collector() {
#if KJ_HAVE_CUPTI
  if (m_state->collecting) {
    // Abandoned region (an exception between start and stop): stop CUPTI writing, deliver what is
    // buffered (into this store, discarded below), never throw.
    for (CUpti_ActivityKind k : collected_kinds) (void)cuptiActivityDisable(k);
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
#endif
  const std::lock_guard lock(global().mutex);
  global().sink = nullptr;
  global().collector_alive = false;
}

std::string cupti_result_text(int result) {
  const char* text = nullptr;
#if KJ_HAVE_CUPTI
  if (cuptiGetResultString(static_cast<CUptiResult>(result), &text) != CUPTI_SUCCESS)
    text = nullptr;
#endif
  return fmt::format("{} ({})", text != nullptr ? text : "unknown error", result);
}

std::string detach_cupti() {
#if KJ_HAVE_CUPTI
  {
    const std::lock_guard lock(global().mutex);
    if (global().collector_alive) return "an activity collector is alive";
  }
  // Outside the lock: a detach may deliver buffers, whose callback takes it.
  if (const CUptiResult r = cuptiFinalize(); r != CUPTI_SUCCESS)
    return "cuptiFinalize failed: " + describe(r);
  const std::lock_guard lock(global().mutex);
  global().callbacks_registered = false;  // gone with CUPTI's state
  return {};
#else
  return "CUPTI not available in this build";
#endif
}

bool activity_collector::available() const noexcept {
  return m_state->available;
}

const std::string& activity_collector::unavailable_reason() const noexcept {
  return m_state->reason;
}

bool activity_collector::collecting() const noexcept {
  return m_state->collecting;
}

bool activity_collector::start() {
  if (m_state->collecting)
    KJ_THROW(error_kind::internal, "activity_collector::start() called twice without stop()");
  if (!m_state->available) return false;
#if KJ_HAVE_CUPTI
  // Work queued before the region must not land in it: finish it first.
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    m_state->reason = fmt::format("cudaDeviceSynchronize before collecting failed: {}: {}",
                                  cudaGetErrorName(e), cudaGetErrorString(e));
    m_state->available = false;
    return false;
  }
  {
    const std::lock_guard lock(global().mutex);
    m_state->records = {};
  }
  for (std::size_t i = 0; i < std::size(collected_kinds); ++i) {
    const CUptiResult r = cuptiActivityEnable(collected_kinds[i]);
    if (r != CUPTI_SUCCESS) {
      for (std::size_t j = 0; j < i; ++j) (void)cuptiActivityDisable(collected_kinds[j]);
      // e.g. CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED under ncu/nsys, or
      // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES.
      m_state->reason = fmt::format("cuptiActivityEnable(kind {}) failed: {}",
                                    static_cast<int>(collected_kinds[i]), describe(r));
      m_state->available = false;
      return false;
    }
  }
  m_state->collecting = true;
  return true;
#else
  return false;
#endif
}

bool activity_collector::stop() {
  if (!m_state->collecting)
    KJ_THROW(error_kind::internal, "activity_collector::stop() without a successful start()");
  m_state->collecting = false;
#if KJ_HAVE_CUPTI
  bool complete = true;
  // Kernel timestamps are written when the kernels finish; a forced flush delivers records whose
  // timestamps are not yet written, so finish the device work first.
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    m_state->reason = fmt::format("cudaDeviceSynchronize after the region failed: {}: {}",
                                  cudaGetErrorName(e), cudaGetErrorString(e));
    complete = false;
  }
  for (CUpti_ActivityKind k : collected_kinds) (void)cuptiActivityDisable(k);
  // Blocks until every buffer was handed to buffer_completed (on this or CUPTI's thread); the
  // store's mutex must not be held here.
  if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      r != CUPTI_SUCCESS) {
    m_state->reason = "cuptiActivityFlushAll failed: " + describe(r);
    complete = false;
  }
  return complete;
#else
  return false;
#endif
}

activity_records activity_collector::records() const {
  const std::lock_guard lock(global().mutex);
  return m_state->records;
}

std::optional<std::uint32_t> activity_collector::stream_id(CUstream_st* stream) const {
  if (!m_state->available) return std::nullopt;
#if KJ_HAVE_CUPTI
  std::uint32_t id = 0;
  if (cuptiGetStreamIdEx(nullptr, stream, 0, &id) != CUPTI_SUCCESS) return std::nullopt;
  return id;
#else
  (void)stream;
  return std::nullopt;
#endif
}

}  // namespace kj::profile
