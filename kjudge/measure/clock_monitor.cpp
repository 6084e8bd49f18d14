#include <kjudge/measure/clock_monitor.hpp>

#include <algorithm>

#include <kjudge/core/stats.hpp>
#include <kjudge/cuda/probe.hpp>

namespace kj::measure::detail {

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
  if (const auto max_mhz = m_nvml->max_sm_clock_mhz(*m_device)) m_max_mhz = *max_mhz;
  // The reference for "throttled": the default applications clock, else the maximum.
  if (const auto def = m_nvml->default_sm_clock_mhz(*m_device); def && *def > 0) {
    m_default_mhz = *def;
  } else {
    m_default_mhz = m_max_mhz;
  }
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
  if (const auto reasons = m_nvml->clock_event_reasons(*m_device)) {
    for (const std::string& r : *reasons) {
      // Readings are taken right after a synchronisation, when the GPU has just gone idle, so
      // "gpu_idle" says nothing about the samples.
      if (r != "gpu_idle") m_reasons.insert(r);
    }
  }
  return static_cast<double>(*mhz);
}

bool clock_monitor::throttled(double mhz, double fraction) const noexcept {
  return m_default_mhz > 0 && mhz < fraction * m_default_mhz;
}

clock_record clock_monitor::record() const {
  clock_record r;
  r.available = m_device.has_value();
  r.source = m_source;
  r.default_sm_mhz = m_default_mhz;
  r.max_sm_mhz = m_max_mhz;
  if (!m_readings_mhz.empty()) {
    r.median_sm_mhz = stats::median(m_readings_mhz);
    r.min_sm_mhz = *std::min_element(m_readings_mhz.begin(), m_readings_mhz.end());
  }
  r.throttle_reasons.assign(m_reasons.begin(), m_reasons.end());
  return r;
}

}  // namespace kj::measure::detail
