#pragma once
/** @file SM clock readings during sampling (docs/measurement-rules.md rule 9): NVML when present;
 *  read-only, never changes clocks. One monitor serves both readers: the timing engine, which reads
 *  right after each round's synchronisation and keeps a clock_record, and `kjudge roofline`, which
 *  reads while its launches run and reports everything observed (clock_observations). */

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <kjudge/cuda/nvml.hpp>
#include <kjudge/measure/timing.hpp>

namespace kj::measure::detail {

/** Minimum, median and maximum of a run's SM clock readings. */
struct clock_spread {
  std::size_t readings = 0;
  double min_mhz = 0;
  double median_mhz = 0;
  double max_mhz = 0;
};

/** The spread of `readings_mhz`; nullopt when there are none. */
[[nodiscard]] std::optional<clock_spread> spread_of(std::span<const double> readings_mhz);

/** Everything a clock_monitor observed, as NVML answered it (nothing substituted or dropped). */
struct clock_observations {
  bool available = false;                  ///< NVML present and knowing the device
  std::string source;                      ///< "nvml" or why not
  std::optional<clock_spread> spread;      ///< nullopt before the first reading
  std::optional<unsigned> default_sm_mhz;  ///< default applications clock, if NVML answered
  std::optional<unsigned> max_sm_mhz;      ///< maximum (boost) SM clock, if NVML answered
  std::vector<std::string> reasons;        ///< every clock-event reason seen, sorted
};

/** The timing engine's record of `seen`. Its reference clock (default_sm_mhz) is the default
 *  applications clock, else the maximum, else 0. "gpu_idle" is dropped from the reasons: the
 *  engine reads right after a synchronisation, when the GPU has just gone idle, so that reason
 *  says nothing about its samples. */
[[nodiscard]] clock_record to_record(const clock_observations& seen);

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

  /** True when `mhz` is below `fraction` x the reference clock (record().default_sm_mhz). False
   *  when no reference clock is known. */
  [[nodiscard]] bool throttled(double mhz, double fraction) const noexcept;

  /** Everything observed so far, unreduced (every reason, NVML's clocks as answered). */
  [[nodiscard]] clock_observations observations() const;

  /** Everything observed so far, as the timing engine records it: to_record(observations()). */
  [[nodiscard]] clock_record record() const { return to_record(observations()); }

 private:
  clock_monitor() = default;

  cuda::nvml* m_nvml = nullptr;
  std::optional<cuda::nvml_device> m_device;
  std::string m_source;
  std::optional<unsigned> m_default_mhz;
  std::optional<unsigned> m_max_mhz;
  std::vector<double> m_readings_mhz;
  std::set<std::string> m_reasons;
};

}  // namespace kj::measure::detail
