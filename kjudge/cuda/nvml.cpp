#include <kjudge/cuda/nvml.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <memory>

#include <fmt/format.h>

namespace kj::cuda {

namespace {

// The subset of nvml.h used here. Values and signatures are part of NVML's stable ABI.
using nvml_return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using nvml_device_t = void*;
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_insufficient_size = 7;               // NVML_ERROR_INSUFFICIENT_SIZE
constexpr unsigned long long nvml_value_not_available = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
constexpr int nvml_clock_sm = 1;                                // NVML_CLOCK_SM
constexpr int nvml_temperature_gpu = 0;                         // NVML_TEMPERATURE_GPU

using init_fn = nvml_return (*)();
using error_string_fn = const char* (*)(nvml_return);
using handle_by_string_fn = nvml_return (*)(const char*, nvml_device_t*);
using clock_fn = nvml_return (*)(nvml_device_t, int, unsigned*);
using reasons_fn = nvml_return (*)(nvml_device_t, unsigned long long*);
using uint_fn = nvml_return (*)(nvml_device_t, unsigned*);
using temperature_fn = nvml_return (*)(nvml_device_t, int, unsigned*);

// nvmlProcessInfo_v2_t, what the _v2 entry points fill (24 bytes). Some R535 drivers' _v3 entry
// points fill a longer struct (with usedGpuCcProtectedMemory, 32 bytes) under the same name, so
// _v2 is asked first, and the buffer leaves room for the longer stride either way.
struct process_info {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
static_assert(sizeof(process_info) == 24, "nvmlProcessInfo_v2_t is 24 bytes");
using processes_fn = nvml_return (*)(nvml_device_t, unsigned*, process_info*);
using mig_mode_fn = nvml_return (*)(nvml_device_t, unsigned*, unsigned*);
using driver_version_fn = nvml_return (*)(char*, unsigned);
constexpr unsigned nvml_driver_version_size = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// Reason bits (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*).
struct reason_bit {
  unsigned long long bit;
  const char* name;
};
constexpr std::array<reason_bit, 9> reason_bits{{
    {0x1ULL, "gpu_idle"},
    {0x2ULL, "applications_clocks_setting"},
    {0x4ULL, "sw_power_cap"},
    {0x8ULL, "hw_slowdown"},
    {0x10ULL, "sync_boost"},
    {0x20ULL, "sw_thermal_slowdown"},
    {0x40ULL, "hw_thermal_slowdown"},
    {0x80ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
}};

template <typename F>
F symbol(void* lib, const char* name) noexcept {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

struct nvml::api {
  error_string_fn error_string = nullptr;
  handle_by_string_fn by_uuid = nullptr;
  handle_by_string_fn by_pci_bus_id = nullptr;
  clock_fn clock_info = nullptr;
  clock_fn max_clock_info = nullptr;
  clock_fn default_applications_clock = nullptr;
  reasons_fn clock_event_reasons = nullptr;
  uint_fn power_usage = nullptr;
  temperature_fn temperature = nullptr;
  processes_fn compute_processes = nullptr;
  processes_fn graphics_processes = nullptr;
  processes_fn mps_processes = nullptr;
  mig_mode_fn mig_mode = nullptr;
  driver_version_fn driver_version = nullptr;
};

namespace {

struct loaded {
  std::unique_ptr<nvml::api> api;
  std::unique_ptr<nvml> session;
  std::string reason;
};

loaded load() {
  loaded out;
  // The driver installs the versioned name; the unversioned one exists only with dev packages.
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    out.reason = fmt::format("libnvidia-ml.so.1 not found: {}", why != nullptr ? why : "dlopen");
    return out;
  }
  auto init = symbol<init_fn>(lib, "nvmlInit_v2");
  auto a = std::make_unique<nvml::api>();
  a->error_string = symbol<error_string_fn>(lib, "nvmlErrorString");
  a->by_uuid = symbol<handle_by_string_fn>(lib, "nvmlDeviceGetHandleByUUID");
  a->by_pci_bus_id = symbol<handle_by_string_fn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  a->clock_info = symbol<clock_fn>(lib, "nvmlDeviceGetClockInfo");
  a->max_clock_info = symbol<clock_fn>(lib, "nvmlDeviceGetMaxClockInfo");
  a->default_applications_clock = symbol<clock_fn>(lib, "nvmlDeviceGetDefaultApplicationsClock");
  // Renamed in newer drivers; the old name remains as a deprecated alias in most.
  a->clock_event_reasons = symbol<reasons_fn>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a->clock_event_reasons == nullptr) {
    a->clock_event_reasons = symbol<reasons_fn>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  a->power_usage = symbol<uint_fn>(lib, "nvmlDeviceGetPowerUsage");
  a->temperature = symbol<temperature_fn>(lib, "nvmlDeviceGetTemperature");
  // The process lists by their _v2 entry points (see process_info), _v3 where _v2 is gone; the
  // unversioned (v1) ones fill a two-field struct and are not used. MPS clients have a list of
  // their own.
  const auto processes_entry = [lib](const char* v2, const char* v3) {
    auto fn = symbol<processes_fn>(lib, v2);
    return fn != nullptr ? fn : symbol<processes_fn>(lib, v3);
  };
  a->compute_processes = processes_entry("nvmlDeviceGetComputeRunningProcesses_v2",
                                         "nvmlDeviceGetComputeRunningProcesses_v3");
  a->graphics_processes = processes_entry("nvmlDeviceGetGraphicsRunningProcesses_v2",
                                          "nvmlDeviceGetGraphicsRunningProcesses_v3");
  a->mps_processes = processes_entry("nvmlDeviceGetMPSComputeRunningProcesses_v2",
                                     "nvmlDeviceGetMPSComputeRunningProcesses_v3");
  a->mig_mode = symbol<mig_mode_fn>(lib, "nvmlDeviceGetMigMode");
  a->driver_version = symbol<driver_version_fn>(lib, "nvmlSystemGetDriverVersion");
  if (init == nullptr || a->clock_info == nullptr || a->by_uuid == nullptr) {
    out.reason = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetClockInfo";
    dlclose(lib);
    return out;
  }
  const nvml_return rc = init();
  if (rc != nvml_success) {
    const char* text = a->error_string != nullptr ? a->error_string(rc) : nullptr;
    out.reason = fmt::format("nvmlInit failed: {}", text != nullptr ? text : std::to_string(rc));
    dlclose(lib);
    return out;
  }
  // The library stays loaded and initialised for the life of the process (see instance()).
  out.api = std::move(a);
  out.session = std::make_unique<nvml>(out.api.get());
  return out;
}

const loaded& state() noexcept {
  static const loaded s = [] {
    try {
      return load();
    } catch (...) {
      loaded failed;
      return failed;
    }
  }();
  return s;
}

template <typename Fn, typename... Args>
std::optional<unsigned> query_uint(Fn fn, Args... args) noexcept {
  if (fn == nullptr) return std::nullopt;
  unsigned value = 0;
  if (fn(args..., &value) != nvml_success) return std::nullopt;
  return value;
}

}  // namespace

nvml* nvml::instance() noexcept {
  return state().session.get();
}

std::string nvml::unavailable_reason() {
  const loaded& s = state();
  if (s.session != nullptr) return {};
  return s.reason.empty() ? std::string("NVML could not be loaded") : s.reason;
}

std::optional<nvml_device> nvml::device(const std::string& uuid,
                                        const std::string& pci_bus_id) const noexcept {
  nvml_device_t h = nullptr;
  if (!uuid.empty() && m_api->by_uuid(uuid.c_str(), &h) == nvml_success) return nvml_device{h};
  if (!pci_bus_id.empty() && m_api->by_pci_bus_id != nullptr &&
      m_api->by_pci_bus_id(pci_bus_id.c_str(), &h) == nvml_success) {
    return nvml_device{h};
  }
  return std::nullopt;
}

std::optional<std::string> nvml::driver_release() const noexcept {
  if (m_api->driver_version == nullptr) return std::nullopt;
  std::array<char, nvml_driver_version_size> text{};
  if (m_api->driver_version(text.data(), static_cast<unsigned>(text.size())) != nvml_success)
    return std::nullopt;
  text.back() = '\0';
  try {
    std::string out(text.data());
    if (out.empty()) return std::nullopt;
    return out;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<unsigned> nvml::sm_clock_mhz(nvml_device d) const noexcept {
  return query_uint(m_api->clock_info, d.handle, nvml_clock_sm);
}

std::optional<unsigned> nvml::default_sm_clock_mhz(nvml_device d) const noexcept {
  return query_uint(m_api->default_applications_clock, d.handle, nvml_clock_sm);
}

std::optional<unsigned> nvml::max_sm_clock_mhz(nvml_device d) const noexcept {
  return query_uint(m_api->max_clock_info, d.handle, nvml_clock_sm);
}

std::optional<std::vector<std::string>> nvml::clock_event_reasons(nvml_device d) const noexcept {
  if (m_api->clock_event_reasons == nullptr) return std::nullopt;
  unsigned long long mask = 0;
  if (m_api->clock_event_reasons(d.handle, &mask) != nvml_success) return std::nullopt;
  try {
    return reason_names(mask);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> nvml::power_watts(nvml_device d) const noexcept {
  const auto milliwatts = query_uint(m_api->power_usage, d.handle);
  if (!milliwatts) return std::nullopt;
  return static_cast<double>(*milliwatts) / 1000.0;
}

std::optional<unsigned> nvml::temperature_c(nvml_device d) const noexcept {
  return query_uint(m_api->temperature, d.handle, nvml_temperature_gpu);
}

namespace {

/** One of NVML's process lists, appended to `out` (pids already there skipped); NVML's error
 *  when it did not answer. The list may grow between the calls that size and fill it: tried
 *  again. Entries are read at the v2 stride; the buffer has room for a driver writing 32-byte
 *  entries, so such a driver cannot write past it. */
std::optional<nvml_return> append_processes(processes_fn fn, nvml_device_t d,
                                            std::vector<gpu_process>& out) {
  constexpr std::size_t longest_entry = 32;
  unsigned capacity = 16;
  std::vector<unsigned char> buffer;
  for (int attempt = 0; attempt < 4; ++attempt) {
    buffer.assign(std::size_t{capacity} * longest_entry, 0);
    auto* infos = reinterpret_cast<process_info*>(buffer.data());
    unsigned count = capacity;
    const nvml_return rc = fn(d, &count, infos);
    if (rc == nvml_insufficient_size) {
      capacity = std::max(count, capacity) + 16;
      continue;
    }
    if (rc != nvml_success) return rc;
    for (unsigned i = 0; i < count && i < capacity; ++i) {
      const process_info& p = infos[i];
      if (std::any_of(out.begin(), out.end(), [&](const gpu_process& q) { return q.pid == p.pid; }))
        continue;
      gpu_process g;
      g.pid = p.pid;
      if (p.used_gpu_memory != nvml_value_not_available) g.used_memory_bytes = p.used_gpu_memory;
      out.push_back(g);
    }
    return std::nullopt;
  }
  return nvml_insufficient_size;
}

}  // namespace

std::optional<std::vector<gpu_process>> nvml::processes(nvml_device d,
                                                        std::string* why) const noexcept {
  try {
    const auto failed = [&](std::string text) -> std::optional<std::vector<gpu_process>> {
      if (why != nullptr) *why = std::move(text);
      return std::nullopt;
    };
    if (m_api->compute_processes == nullptr)
      return failed("libnvidia-ml.so.1 lacks nvmlDeviceGetComputeRunningProcesses_v2/_v3");
    std::vector<gpu_process> out;
    if (const auto rc = append_processes(m_api->compute_processes, d.handle, out)) {
      const char* text = m_api->error_string != nullptr ? m_api->error_string(*rc) : nullptr;
      return failed(fmt::format("NVML's compute process list: {}",
                                text != nullptr ? text : std::to_string(*rc)));
    }
    // Graphics contexts and MPS clients count too where NVML lists them (not every board or
    // driver does: no answer is taken as none).
    for (processes_fn more : {m_api->graphics_processes, m_api->mps_processes})
      if (more != nullptr) static_cast<void>(append_processes(more, d.handle, out));
    return out;
  } catch (...) {
    if (why != nullptr) *why = "out of memory";
    return std::nullopt;
  }
}

std::optional<bool> nvml::mig_enabled(nvml_device d) const noexcept {
  if (m_api->mig_mode == nullptr) return std::nullopt;
  unsigned current = 0, pending = 0;
  if (m_api->mig_mode(d.handle, &current, &pending) != nvml_success) return std::nullopt;
  return current != 0;
}

std::vector<std::string> nvml::reason_names(unsigned long long mask) {
  std::vector<std::string> names;
  for (const reason_bit& r : reason_bits) {
    if ((mask & r.bit) != 0) {
      names.emplace_back(r.name);
      mask &= ~r.bit;
    }
  }
  if (mask != 0) names.push_back(fmt::format("{:#x}", mask));
  return names;
}

}  // namespace kj::cuda
