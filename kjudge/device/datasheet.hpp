#pragma once
/** @file What NVIDIA publishes about the common data-centre and workstation GPUs (dense peaks per
 *  datatype, memory, L2, SMs, boost clock), and the few peaks that can be derived from the
 *  properties a device reports. Every peak here is DENSE: NVIDIA's "with sparsity" figures
 *  (2:4 structured sparsity) are twice the dense ones and are never stored. Datasheet figures and
 *  derived figures are kept apart and labelled ("datasheet" / "derived"), so a reader always knows
 *  which one a number is. See docs/specs.md. */

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/result.hpp>
#include <kjudge/cuda/probe.hpp>

namespace kj::device {

/** The datatypes and pipes a datasheet lists. "_tensor" is the tensor-core pipe; fp64 and fp32 are
 *  the ordinary (CUDA-core) pipes, counting a fused multiply-add as 2 FLOP. */
enum class datatype {
  fp64,
  fp64_tensor,
  fp32,
  tf32_tensor,
  fp16_tensor,
  bf16_tensor,
  fp8_tensor,
  int8_tensor,
};

inline constexpr std::size_t datatype_count = 8;
inline constexpr std::array<datatype, datatype_count> all_datatypes{
    datatype::fp64,        datatype::fp64_tensor, datatype::fp32,       datatype::tf32_tensor,
    datatype::fp16_tensor, datatype::bf16_tensor, datatype::fp8_tensor, datatype::int8_tensor,
};

/** "fp64", "fp64_tensor", ..., "int8_tensor". */
[[nodiscard]] std::string_view to_string(datatype t) noexcept;
/** "FP64", "FP64 tensor", ..., "INT8 tensor" (for people). */
[[nodiscard]] std::string_view display_name(datatype t) noexcept;
/** True for integer datatypes, whose peaks are TOP/s rather than TFLOP/s. */
[[nodiscard]] bool is_integer(datatype t) noexcept;

/** One GPU as its datasheet describes it. Sizes are bytes (NVIDIA's memory "GB" for these parts
 *  are GiB, as the devices report them), bandwidth TB/s (10^12 bytes/s), clocks MHz. */
struct datasheet_entry {
  std::string key;           ///< "h100_sxm": stable, for lookup and JSON
  std::string name;          ///< "NVIDIA H100 SXM"
  std::string architecture;  ///< "Hopper"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int boost_clock_mhz = 0;
  std::size_t memory_bytes = 0;
  std::string memory_type;  ///< "HBM3"
  double memory_tbps = 0;   ///< DRAM bandwidth, TB/s
  std::size_t l2_bytes = 0;
  /** Dense peaks, TFLOP/s (TOP/s for integer types), indexed by datatype. Absent: the GPU does
   *  not support the type on that pipe, or its datasheet does not list it (FP64 on Ada). */
  std::array<std::optional<double>, datatype_count> peaks{};
  std::string source = "datasheet";
  std::string document;  ///< the NVIDIA document the figures come from
  std::string note;      ///< caveats (accumulator precision, clocks), empty when none

  [[nodiscard]] std::optional<double> peak(datatype t) const noexcept {
    return peaks[static_cast<std::size_t>(t)];
  }
};

/** The whole table, in a fixed order. Lives for the process. */
[[nodiscard]] std::span<const datasheet_entry> datasheet();

/** The entry for a device name as the CUDA runtime reports it ("NVIDIA H200",
 *  "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090", ...). Case,
 *  punctuation and the "NVIDIA"/"GeForce"/"Tesla" words do not matter; the model must be a whole
 *  word ("A10" is not "A100"), and variants with other figures ("H100 NVL", "RTX 4090 D",
 *  "A100-SXM4-40GB") find no entry rather than a wrong one. nullptr when none matches. */
[[nodiscard]] const datasheet_entry* find_by_name(std::string_view cuda_name);
/** The entry with this key ("h200_sxm"); nullptr when none. */
[[nodiscard]] const datasheet_entry* find_by_key(std::string_view key);

/** Peaks computed from what the device reports, not from a datasheet. Each is absent when the
 *  properties do not determine it (an unknown architecture, a zero clock). */
struct derived_peaks {
  std::string source = "derived";
  std::optional<int> fp32_lanes_per_sm;  ///< FP32 FMA lanes per SM for the architecture
  /** 2 FLOP (one FMA) x SMs x FP32 lanes per SM x SM boost clock, TFLOP/s. */
  std::optional<double> fp32_tflops;
  /** 2 (double data rate) x memory clock x bus width / 8, TB/s. */
  std::optional<double> dram_tbps;
  /** Why a figure was withheld (check_against_datasheet): its value is then absent. */
  std::vector<flag> flags;
};

/** Flag codes of a withheld derived figure. */
inline constexpr const char* derived_fp32_code = "derived_fp32_above_datasheet";
inline constexpr const char* derived_dram_code = "derived_dram_above_datasheet";
/** How far a derived peak may exceed the datasheet's before it is withheld (clock rounding). */
inline constexpr double derived_peak_tolerance = 1.05;

/** A derived figure above `derived_peak_tolerance` x the datasheet's figure for the same GPU
 *  contradicts it (a wrong lanes table or clock reading): the figure is removed and a warning
 *  (derived_fp32_code, derived_dram_code) says why. Figures below it are kept: a board may run
 * under its datasheet clock. Without a datasheet row nothing is checked. */
[[nodiscard]] derived_peaks checked_against_datasheet(derived_peaks d,
                                                      const datasheet_entry* datasheet);

/** FP32 lanes per SM for a compute capability (64 on sm_60, sm_7x and sm_80; 128 on sm_86, sm_89,
 *  sm_90 and Blackwell); absent when unknown. */
[[nodiscard]] std::optional<int> fp32_lanes_per_sm(int cc_major, int cc_minor) noexcept;

/** Derives what it can from d.sm_count, d.sm_clock_khz, d.memory_clock_khz and
 *  d.memory_bus_width_bits. Never throws. */
[[nodiscard]] derived_peaks derive_peaks(const cuda::device_properties& d) noexcept;

/** {"key", "name", ..., "source": "datasheet", "sparsity": "dense", "peaks": {"fp64_tflops": ...,
 *  "int8_tensor_tops": ...}} with null for an absent peak (schema in docs/specs.md). */
[[nodiscard]] nlohmann::json to_json(const datasheet_entry& e);
/** {"source": "derived", "fp32_lanes_per_sm", "fp32_tflops", "dram_tbps"}, null when absent. */
[[nodiscard]] nlohmann::json to_json(const derived_peaks& d);
/** "fp32_tflops", "int8_tensor_tops": the JSON field name of a peak. */
[[nodiscard]] std::string peak_field_name(datatype t);

}  // namespace kj::device
