#pragma once
/** @file What `kjudge specs` reports: the properties of every visible GPU, what NVML says about
 *  its clocks, power and temperature now, the peaks derived from its properties, and its datasheet
 *  row; plus the driver and runtime versions. Collecting calls the CUDA runtime (and NVML when it
 *  can be loaded) in the calling process; rendering and JSON work on the collected values only. */

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/cuda/probe.hpp>
#include <kjudge/device/datasheet.hpp>

namespace kj::device {

/** NVML's view of one device, read once. Each figure is absent when NVML does not answer it. */
struct nvml_readings {
  bool available = false;
  std::string reason;  ///< why not available (library missing, device unknown to NVML)
  std::optional<unsigned> sm_clock_mhz;          ///< now
  std::optional<unsigned> max_sm_clock_mhz;      ///< boost
  std::optional<unsigned> default_sm_clock_mhz;  ///< default applications clock
  std::optional<double> power_watts;
  std::optional<unsigned> temperature_c;
  std::optional<std::vector<std::string>> clock_event_reasons;  ///< empty: none active
};

/** One GPU. `datasheet` points into datasheet() (nullptr: no entry for this name). */
struct gpu_specs {
  cuda::device_properties properties;
  nvml_readings nvml;
  derived_peaks derived;
  const datasheet_entry* datasheet = nullptr;
};

/** Everything `kjudge specs` shows. Versions are CUDA's integers (13000 = 13.0); 0 = unknown or
 *  no driver. */
struct specs_report {
  bool gpu_available = false;
  std::string gpu_unavailable_reason;
  int driver_version = 0;
  int runtime_version = 0;
  /** The kernel driver's release ("580.159.04", NVML's); empty where NVML is not available. */
  std::string driver_release;
  std::vector<gpu_specs> gpus;
};

/** Probes for GPUs and, when there are some, queries each one and NVML. Without a GPU it returns
 *  a report with gpu_available false and the reason, and does not throw. Throws kj::error(cuda)
 *  when a device that the runtime counted cannot be queried. */
[[nodiscard]] specs_report collect_specs();

/** Reads NVML for one device; never throws (NVML's absence is a reason, not an error). */
[[nodiscard]] nvml_readings read_nvml(const cuda::device_properties& d);

/** 13000 -> "13.0", 12040 -> "12.4"; 0 -> "". */
[[nodiscard]] std::string cuda_version_string(int version);

/** The "kjudge.specs/1" object (docs/specs.md). The whole datasheet table is included under
 *  "datasheet" when with_table is true. */
[[nodiscard]] nlohmann::json to_json(const specs_report& r, bool with_table);

/** The report for people: one block per GPU, with its datasheet row; no datasheet table. Without
 *  a GPU only the driver and runtime versions (the caller says why there is no GPU). */
[[nodiscard]] std::string render_specs_text(const specs_report& r);
/** The whole datasheet table, with the source document of each row. */
[[nodiscard]] std::string render_datasheet_table();

}  // namespace kj::device
