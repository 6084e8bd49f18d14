#pragma once
/** @file NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): clocks, clock-event
 *  (throttle) reasons, power and temperature of a GPU, and the processes using it. Read-only:
 * kjudge never changes clocks or power limits. A machine without the library (no driver, a
 * container without it) is normal: instance() returns nullptr and unavailable_reason() says why.
 * nvml.h is not included (it is not guaranteed to be installed); the few types and entry points
 * used are declared in nvml.cpp. */

#include <optional>
#include <string>
#include <vector>

namespace kj::cuda {

/** Opaque NVML device handle (nvmlDevice_t); valid while the process lives. */
struct nvml_device {
  void* handle = nullptr;
};

/** A process with a CUDA (compute) or graphics context on a GPU, as NVML lists it. */
struct gpu_process {
  /** In the PID namespace NVML answers for: the caller's where the driver can tell (a container
   *  sharing the host's PIDs, or none), else the host's. */
  unsigned pid = 0;
  /** The GPU memory it holds; absent where NVML does not say (some containers, MIG). */
  std::optional<unsigned long long> used_memory_bytes;
};

/** The process-wide NVML session. Queries return std::nullopt when NVML answers with an error
 *  (for example "not supported" on a MIG instance); none of them throws. Thread-safe (NVML is). */
class nvml {
 public:
  /** The loaded and initialised library, or nullptr when unavailable. Loaded once per process;
   *  never unloaded (other threads may still hold device handles at exit). */
  [[nodiscard]] static nvml* instance() noexcept;
  /** Why instance() is nullptr ("libnvidia-ml.so.1 not found: ...", "nvmlInit failed: ..."); empty
   *  when available. */
  [[nodiscard]] static std::string unavailable_reason();

  /** Looks the device up by its UUID ("GPU-...", as query_device() gives), falling back to the PCI
   *  bus id ("0000:19:00.0"); either may be empty. */
  [[nodiscard]] std::optional<nvml_device> device(const std::string& uuid,
                                                  const std::string& pci_bus_id) const noexcept;

  /** The kernel driver's release, "580.159.04" (nvmlSystemGetDriverVersion): what
   *  cudaDriverGetVersion's API version ("13.0") does not tell apart. */
  [[nodiscard]] std::optional<std::string> driver_release() const noexcept;
  /** Current SM clock, MHz. */
  [[nodiscard]] std::optional<unsigned> sm_clock_mhz(nvml_device d) const noexcept;
  /** The default applications SM clock (what the GPU runs at unless someone changed it), MHz. */
  [[nodiscard]] std::optional<unsigned> default_sm_clock_mhz(nvml_device d) const noexcept;
  /** Maximum SM clock (boost), MHz. */
  [[nodiscard]] std::optional<unsigned> max_sm_clock_mhz(nvml_device d) const noexcept;
  /** Names of the clock-event (throttle) reasons active now, e.g. "sw_power_cap",
   *  "hw_thermal_slowdown", "gpu_idle"; empty when none. */
  [[nodiscard]] std::optional<std::vector<std::string>> clock_event_reasons(
      nvml_device d) const noexcept;
  /** Board power draw, watts. */
  [[nodiscard]] std::optional<double> power_watts(nvml_device d) const noexcept;
  /** GPU core temperature, degrees Celsius. */
  [[nodiscard]] std::optional<unsigned> temperature_c(nvml_device d) const noexcept;

  /** The processes with a compute or graphics context on the device now, and MPS clients,
   *  each pid once; std::nullopt (and, with `why`, NVML's reason) when NVML does not answer. */
  [[nodiscard]] std::optional<std::vector<gpu_process>> processes(
      nvml_device d, std::string* why = nullptr) const noexcept;
  /** Whether MIG is on (the device is split into instances); std::nullopt where NVML does not
   *  say (MIG-less boards answer "not supported"). */
  [[nodiscard]] std::optional<bool> mig_enabled(nvml_device d) const noexcept;

  /** Names for the bits of an NVML clock-event reason mask (unknown bits as "0x..."). */
  [[nodiscard]] static std::vector<std::string> reason_names(unsigned long long mask);

  struct api;  ///< the resolved entry points (defined in nvml.cpp)
  explicit nvml(const api* entry_points) noexcept : m_api(entry_points) {}

 private:
  const api* m_api;
};

}  // namespace kj::cuda
