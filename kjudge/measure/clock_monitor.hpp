#pragma once
/** @file SM clock readings during sampling (measurement.md rule 9): NVML when present; read-only,
 *  never changes clocks. */

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <kjudge/cuda/nvml.hpp>
#include <kjudge/measure/timing.hpp>

namespace kj::measure::detail {

class clock_monitor {
 public:
  /** Looks up the device (CUDA ordinal) in NVML; never throws for a missing NVML (then
   *  available() is false and record().source says why). Throws kj::error(cuda) only when the
   *  device itself cannot be queried. */
  explicit clock_monitor(int ordinal);
  /** For CPU-only runs: unavailable, with `reason` as the source. */
  static clock_monitor unavailable(std::string reason);

  [[nodiscard]] bool available() const noexcept { return m_device.has_value(); }

  /** Reads the SM clock now (MHz) and the active clock-event reasons; nullopt when unavailable
   *  or NVML does not answer. Costs tens of microseconds: call it outside timed regions. */
  std::optional<double> read();

  /** True when `mhz` is below `fraction` x the reference (default) clock. False when no
   *  reference clock is known. */
  [[nodiscard]] bool throttled(double mhz, double fraction) const noexcept;

  /** Everything observed so far. */
  [[nodiscard]] clock_record record() const;

 private:
  clock_monitor() = default;

  cuda::nvml* m_nvml = nullptr;
  std::optional<cuda::nvml_device> m_device;
  std::string m_source;
  double m_default_mhz = 0;
  double m_max_mhz = 0;
  std::vector<double> m_readings_mhz;
  std::set<std::string> m_reasons;
};

}  // namespace kj::measure::detail
