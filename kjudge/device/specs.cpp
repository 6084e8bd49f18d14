#include <kjudge/device/specs.hpp>

#include <cuda_runtime_api.h>

#include <kjudge/config.hpp>
#include <kjudge/core/source_commit.hpp>
#include <kjudge/cuda/nvml.hpp>

namespace kj::device {

namespace {

/** cudaDriverGetVersion gives 0 without a driver; failures read as unknown (0) too. */
int driver_version() noexcept {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return v;
}

int runtime_version() noexcept {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return v;
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json nullable(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json to_json(const nvml_readings& n) {
  return {
      {"available", n.available},
      {"reason", nullable(n.reason)},
      {"sm_clock_mhz", opt(n.sm_clock_mhz)},
      {"max_sm_clock_mhz", opt(n.max_sm_clock_mhz)},
      {"default_sm_clock_mhz", opt(n.default_sm_clock_mhz)},
      {"power_watts", opt(n.power_watts)},
      {"temperature_c", opt(n.temperature_c)},
      {"clock_event_reasons", opt(n.clock_event_reasons)},
  };
}

nlohmann::json to_json(const gpu_specs& g) {
  const auto& p = g.properties;
  return {
      {"ordinal", p.ordinal},
      {"name", p.name},
      {"uuid", p.uuid},
      {"pci_bus_id", p.pci_bus_id},
      {"compute_capability", std::to_string(p.cc_major) + "." + std::to_string(p.cc_minor)},
      {"arch", p.arch()},
      {"sm_count", p.sm_count},
      {"total_memory_bytes", p.total_memory_bytes},
      {"l2_bytes", p.l2_bytes},
      {"smem_per_block_optin_bytes", p.smem_per_block_optin_bytes},
      {"smem_per_sm_bytes", p.smem_per_sm_bytes},
      {"regs_per_sm", p.regs_per_sm},
      {"max_threads_per_sm", p.max_threads_per_sm},
      {"sm_clock_mhz", p.sm_clock_khz / 1000.0},
      {"memory_clock_mhz", p.memory_clock_khz / 1000.0},
      {"memory_bus_width_bits", p.memory_bus_width_bits},
      {"nvml", to_json(g.nvml)},
      {"derived", to_json(g.derived)},
      {"datasheet_key", g.datasheet ? nlohmann::json(g.datasheet->key) : nlohmann::json(nullptr)},
      {"datasheet", g.datasheet ? to_json(*g.datasheet) : nlohmann::json(nullptr)},
  };
}

}  // namespace

std::string cuda_version_string(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

nvml_readings read_nvml(const cuda::device_properties& d) {
  nvml_readings r;
  try {
    const auto* lib = cuda::nvml::instance();
    if (lib == nullptr) {
      r.reason = "NVML not available: " + cuda::nvml::unavailable_reason();
      return r;
    }
    const auto dev = lib->device(d.uuid, d.pci_bus_id);
    if (!dev) {
      r.reason = "NVML does not know device " + d.uuid + " (" + d.pci_bus_id + ")";
      return r;
    }
    r.available = true;
    r.sm_clock_mhz = lib->sm_clock_mhz(*dev);
    r.max_sm_clock_mhz = lib->max_sm_clock_mhz(*dev);
    r.default_sm_clock_mhz = lib->default_sm_clock_mhz(*dev);
    r.power_watts = lib->power_watts(*dev);
    r.temperature_c = lib->temperature_c(*dev);
    r.clock_event_reasons = lib->clock_event_reasons(*dev);
  } catch (const std::exception& e) {
    // Only allocation can throw here; report it rather than fail the whole command.
    r.available = false;
    r.reason = e.what();
  }
  return r;
}

specs_report collect_specs() {
  specs_report r;
  r.driver_version = driver_version();
  r.runtime_version = runtime_version();
  if (const cuda::nvml* lib = cuda::nvml::instance(); lib != nullptr)
    r.driver_release = lib->driver_release().value_or("");
  const auto pr = cuda::probe();
  r.gpu_available = pr.available;
  if (!pr.available) {
    r.gpu_unavailable_reason = pr.reason.empty() ? "no CUDA device" : pr.reason;
    return r;
  }
  for (int i = 0; i < pr.device_count; ++i) {
    gpu_specs g;
    g.properties = cuda::query_device(i);
    g.nvml = read_nvml(g.properties);
    g.datasheet = find_by_name(g.properties.name);
    g.derived = checked_against_datasheet(derive_peaks(g.properties), g.datasheet);
    r.gpus.push_back(std::move(g));
  }
  return r;
}

nlohmann::json to_json(const specs_report& r, bool with_table) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& g : r.gpus) devices.push_back(to_json(g));
  nlohmann::json j = {
      {"schema", "kjudge.specs/1"},
      {"kjudge_version", KJ_VERSION},
      {"kjudge_commit", source_commit()},
      {"gpu_available", r.gpu_available},
      {"gpu_unavailable_reason", nullable(r.gpu_unavailable_reason)},
      {"driver_version", nullable(cuda_version_string(r.driver_version))},
      {"driver_release", nullable(r.driver_release)},
      {"runtime_version", nullable(cuda_version_string(r.runtime_version))},
      {"devices", std::move(devices)},
  };
  if (with_table) {
    nlohmann::json table = nlohmann::json::array();
    for (const auto& e : datasheet()) table.push_back(to_json(e));
    j["datasheet"] = std::move(table);
  }
  return j;
}

}  // namespace kj::device
