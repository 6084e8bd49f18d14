#include <fmt/format.h>

#include <kjudge/device/datasheet.hpp>

#include <algorithm>
#include <cctype>
#include <vector>

#include "datasheet_rows.hpp"

namespace kj::device {

std::string_view to_string(datatype t) noexcept {
  switch (t) {
    case datatype::fp64:
      return "fp64";
    case datatype::fp64_tensor:
      return "fp64_tensor";
    case datatype::fp32:
      return "fp32";
    case datatype::tf32_tensor:
      return "tf32_tensor";
    case datatype::fp16_tensor:
      return "fp16_tensor";
    case datatype::bf16_tensor:
      return "bf16_tensor";
    case datatype::fp8_tensor:
      return "fp8_tensor";
    case datatype::int8_tensor:
      return "int8_tensor";
  }
  return "unknown";
}

std::string_view display_name(datatype t) noexcept {
  switch (t) {
    case datatype::fp64:
      return "FP64";
    case datatype::fp64_tensor:
      return "FP64 tensor";
    case datatype::fp32:
      return "FP32";
    case datatype::tf32_tensor:
      return "TF32 tensor";
    case datatype::fp16_tensor:
      return "FP16 tensor";
    case datatype::bf16_tensor:
      return "BF16 tensor";
    case datatype::fp8_tensor:
      return "FP8 tensor";
    case datatype::int8_tensor:
      return "INT8 tensor";
  }
  return "unknown";
}

bool is_integer(datatype t) noexcept {
  return t == datatype::int8_tensor;
}

std::string peak_field_name(datatype t) {
  return std::string(to_string(t)) + (is_integer(t) ? "_tops" : "_tflops");
}

std::span<const datasheet_entry> datasheet() {
  static const std::vector<datasheet_entry> entries = [] {
    std::vector<datasheet_entry> v;
    for (const auto& row : detail::datasheet_rows()) v.push_back(row.entry);
    return v;
  }();
  return entries;
}

namespace {

/** Lower-case runs of letters and digits: "NVIDIA A100-SXM4-80GB" -> {nvidia, a100, sxm4, 80gb}. */
std::vector<std::string> words_of(std::string_view name) {
  std::vector<std::string> words;
  std::string current;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      current += static_cast<char>(std::tolower(u));
    } else if (!current.empty()) {
      words.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

bool matches(const detail::name_rule& rule, const std::vector<std::string>& words) {
  const auto has = [&words](const std::string& w) {
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  for (const auto& group : rule.all_of)
    if (std::none_of(group.begin(), group.end(), has)) return false;
  return std::none_of(rule.none_of.begin(), rule.none_of.end(), has);
}

}  // namespace

const datasheet_entry* find_by_name(std::string_view cuda_name) {
  const auto words = words_of(cuda_name);
  const auto& rows = detail::datasheet_rows();
  const auto entries = datasheet();
  // The rules are written so that at most one matches; the first wins if two ever do.
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (matches(rows[i].rule, words)) return &entries[i];
  return nullptr;
}

const datasheet_entry* find_by_key(std::string_view key) {
  for (const auto& e : datasheet())
    if (e.key == key) return &e;
  return nullptr;
}

std::optional<int> fp32_lanes_per_sm(int cc_major, int cc_minor) noexcept {
  switch (cc_major) {
    case 6:
      return cc_minor == 0 ? 64 : 128;  // GP100 has 64; GP10x 128
    case 7:
      return 64;  // Volta, Turing
    case 8:
      return cc_minor == 0 ? 64 : 128;  // GA100 has 64; GA10x, AD10x 128
    case 9:
      return 128;  // Hopper
    case 10:
    case 11:
    case 12:
      return 128;  // Blackwell (data-centre, Thor, consumer)
    default:
      return std::nullopt;
  }
}

derived_peaks derive_peaks(const cuda::device_properties& d) noexcept {
  derived_peaks out;
  out.fp32_lanes_per_sm = fp32_lanes_per_sm(d.cc_major, d.cc_minor);
  if (out.fp32_lanes_per_sm && d.sm_count > 0 && d.sm_clock_khz > 0) {
    // FLOP/s = 2 (an FMA) x SMs x lanes x Hz; kHz x 1e3 = Hz; / 1e12 = TFLOP/s.
    out.fp32_tflops = 2.0 * d.sm_count * *out.fp32_lanes_per_sm * (d.sm_clock_khz * 1e3) / 1e12;
  }
  if (d.memory_clock_khz > 0 && d.memory_bus_width_bits > 0) {
    // bytes/s = 2 (double data rate) x Hz x bits / 8; / 1e12 = TB/s.
    out.dram_tbps = 2.0 * (d.memory_clock_khz * 1e3) * d.memory_bus_width_bits / 8.0 / 1e12;
  }
  return out;
}

derived_peaks checked_against_datasheet(derived_peaks d, const datasheet_entry* datasheet) {
  if (datasheet == nullptr) return d;
  const auto check = [&d](std::optional<double>& value, std::optional<double> sheet,
                          const char* what, const char* code, const char* unit) {
    if (!value || !sheet || *sheet <= 0 || *value <= derived_peak_tolerance * *sheet) return;
    d.flags.push_back({code, "warning",
                       fmt::format("derived {} {:.2f} {} is above {:.2f} x the datasheet's {:.2f} "
                                   "{}: the lanes table or the clock reading is wrong; not shown",
                                   what, *value, unit, derived_peak_tolerance, *sheet, unit)});
    value.reset();
  };
  check(d.fp32_tflops, datasheet->peak(datatype::fp32), "FP32", derived_fp32_code, "TFLOP/s");
  check(d.dram_tbps, datasheet->memory_tbps, "DRAM", derived_dram_code, "TB/s");
  return d;
}

nlohmann::json to_json(const datasheet_entry& e) {
  nlohmann::json peaks = nlohmann::json::object();
  for (const auto t : all_datatypes) {
    const auto p = e.peak(t);
    peaks[peak_field_name(t)] = p ? nlohmann::json(*p) : nlohmann::json(nullptr);
  }
  return {
      {"key", e.key},
      {"name", e.name},
      {"architecture", e.architecture},
      {"compute_capability", std::to_string(e.cc_major) + "." + std::to_string(e.cc_minor)},
      {"sm_count", e.sm_count},
      {"boost_clock_mhz", e.boost_clock_mhz},
      {"memory_bytes", e.memory_bytes},
      {"memory_type", e.memory_type},
      {"memory_bandwidth_tbps", e.memory_tbps},
      {"l2_bytes", e.l2_bytes},
      {"sparsity", "dense"},
      {"peaks", std::move(peaks)},
      {"source", e.source},
      {"document", e.document},
      {"note", e.note},
  };
}

nlohmann::json to_json(const derived_peaks& d) {
  const auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {
      {"source", d.source},
      {"fp32_lanes_per_sm", opt(d.fp32_lanes_per_sm)},
      {"fp32_tflops", opt(d.fp32_tflops)},
      {"dram_tbps", opt(d.dram_tbps)},
      {"flags", d.flags},
  };
}

}  // namespace kj::device
