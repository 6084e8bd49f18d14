#include <kjudge/measure/clock_monitor.hpp>

#include <algorithm>
#include <iterator>

#include <kjudge/core/stats.hpp>
#include <kjudge/cuda/probe.hpp>

namespace kj::measure::detail {

namespace {

/** The clock samples are judged against: the default applications clock, else the maximum (NVML
 *  may not answer for the default, or answer 0), else 0 (unknown). */
double reference_mhz(std::optional<unsigned> default_mhz,
                     std::optional<unsigned> max_mhz) noexcept {
  if (default_mhz && *default_mhz > 0) return *default_mhz;
  return max_mhz.value_or(0);
}

}  // namespace

std::optional<clock_spread> spread_of(std::span<const double> readings_mhz) {
  if (readings_mhz.empty()) return std::nullopt;
  const auto [min, max] = std::minmax_element(readings_mhz.begin(), readings_mhz.end());
  return clock_spread{readings_mhz.size(), *min, stats::median(readings_mhz), *max};
}

clock_record to_record(const clock_observations& seen) {
  clock_record r;
  r.available = seen.available;
  r.source = seen.source;
  r.default_sm_mhz = reference_mhz(seen.default_sm_mhz, seen.max_sm_mhz);
  r.max_sm_mhz = seen.max_sm_mhz.value_or(0);
  if (seen.spread) {
    r.median_sm_mhz = seen.spread->median_mhz;
    r.min_sm_mhz = seen.spread->min_mhz;
  }
  std::copy_if(seen.reasons.begin(), seen.reasons.end(), std::back_inserter(r.throttle_reasons),
               [](const std::string& reason) { return reason != "gpu_idle"; });
  return r;
}

clock_monitor::clock_monitor(int ordinal) {
  m_nvml = cuda::nvml::instance();
  if (m_nvml == nullptr) {
    m_source = cuda::nvml::unavailable_reason();
    return;
  }
  const cuda::device_properties props = cuda::query_device(ordinal);
  m_device = m_nvml->device(props.uuid, props.pci_bus_id);
  if (!m_device) {
    m_source = "NVML does not know the device " + props.uuid + " (" + props.pci_bus_id + ")";
    return;
  }
  m_source = "nvml";
  m_max_mhz = m_nvml->max_sm_clock_mhz(*m_device);
  m_default_mhz = m_nvml->default_sm_clock_mhz(*m_device);
}

clock_monitor clock_monitor::unavailable(std::string reason) {
  clock_monitor m;
  m.m_source = std::move(reason);
  return m;
}

std::optional<double> clock_monitor::read() {
  if (!m_device) return std::nullopt;
  const auto mhz = m_nvml->sm_clock_mhz(*m_device);
  if (!mhz) return std::nullopt;
  m_readings_mhz.push_back(static_cast<double>(*mhz));
  if (const auto reasons = m_nvml->clock_event_reasons(*m_device))
    m_reasons.insert(reasons->begin(), reasons->end());
  return static_cast<double>(*mhz);
}

bool clock_monitor::throttled(double mhz, double fraction) const noexcept {
  const double reference = reference_mhz(m_default_mhz, m_max_mhz);
  return reference > 0 && mhz < fraction * reference;
}

clock_observations clock_monitor::observations() const {
  clock_observations seen;
  seen.available = m_device.has_value();
  seen.source = m_source;
  seen.spread = spread_of(m_readings_mhz);
  seen.default_sm_mhz = m_default_mhz;
  seen.max_sm_mhz = m_max_mhz;
  seen.reasons.assign(m_reasons.begin(), m_reasons.end());
  return seen;
}

}  // namespace kj::measure::detail
