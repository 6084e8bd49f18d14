#include <kjudge/roofline/report.hpp>

#include <fmt/format.h>

#include <kjudge/device/specs.hpp>
#include <kjudge/profile/format.hpp>

namespace kj::roofline {

namespace {

constexpr double tera = 1e12;

std::string bytes_text(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / (1 << 20));
  return fmt::format("{:.0f} KiB", b / 1024);
}

/** The number, or "flagged: <code>" / "n/a: <reason>" where a failed figure's number would be. */
template <class Format>
std::string cell(const profile::checked<double>& c, Format&& format) {
  if (c.ok()) return format(c.value());
  if (c.is_missing()) return "n/a";
  return "flagged: " + c.failure().code;
}

std::string bandwidth_row(const char* label, const profile::checked<double>& c,
                          const bandwidth_figure& f, double datasheet_tbps) {
  auto bw = [](double tbps) { return profile::format_bytes_per_s(tbps * tera); };
  return fmt::format("  {:<22} {:<28} {:<14} {:<12} {:<9} {}\n", label, cell(c, bw),
                     c.ok() ? bw(f.median_tbps) : "",
                     f.measured() ? bytes_text(f.working_set_bytes) : "",
                     f.measured() ? fmt::format("{:.2f} ms", f.launch_ms) : "",
                     datasheet_tbps > 0 ? bw(datasheet_tbps) : "");
}

std::string compute_row(const char* label, const profile::checked<double>& c,
                        const compute_figure& f, double datasheet_tflops) {
  auto fl = [](double tflops) { return profile::format_flop_per_s(tflops * tera); };
  return fmt::format("  {:<22} {:<28} {:<14} {:<12} {:<9} {}\n", label, cell(c, fl),
                     c.ok() ? fl(f.median_tflops) : "", "",
                     f.measured() ? fmt::format("{:.2f} ms", f.launch_ms) : "",
                     datasheet_tflops > 0 ? fl(datasheet_tflops) : "");
}

/** Latency rows have longer labels and shorter numbers: the label column takes 10 characters of
 *  the best column, so the median column lines up with the tables above. */
std::string latency_row(const char* label, const profile::checked<double>& c,
                        const latency_figure& f) {
  auto us = [](double v) { return fmt::format("{:.2f} us", v); };
  return fmt::format(
      "  {:<32} {:<18} {:<14} {}\n", label, cell(c, us), c.ok() ? us(f.median_us) : "",
      f.measured() ? fmt::format("{} per repetition", f.launches_per_repetition) : "");
}

}  // namespace

std::string render_text(const roofline_result& r, const checked_roofline& c,
                        std::string_view origin) {
  using device::datatype;
  const auto* ds = c.datasheet;
  auto peak = [ds](datatype t) { return ds != nullptr ? ds->peak(t).value_or(0.0) : 0.0; };
  std::string out;
  const auto& g = r.gpu;
  out += fmt::format("{} ({}), compute capability {}.{}, {} SMs, L2 {}\n", g.name, g.uuid,
                     g.cc_major, g.cc_minor, g.sm_count, bytes_text(g.l2_bytes));
  out += fmt::format("driver {}, runtime {}; measured {} in {:.1f} s; {}\n",
                     device::cuda_version_string(g.driver_version),
                     device::cuda_version_string(g.runtime_version), r.measured_at_utc, r.measure_s,
                     origin);
  const auto& k = r.clocks;
  if (k.sm_min_mhz && k.sm_max_mhz)
    out += fmt::format("SM clock during the run: {:.0f}-{:.0f} MHz (median {:.0f}{})\n",
                       *k.sm_min_mhz, *k.sm_max_mhz, k.sm_median_mhz.value_or(0.0),
                       k.sm_default_mhz ? fmt::format(", default {}", *k.sm_default_mhz) : "");
  else
    out += fmt::format("SM clock during the run: not read ({})\n", k.source);
  out += "\n";
  out += fmt::format("  {:<22} {:<28} {:<14} {:<12} {:<9} {}\n", "memory", "best", "median",
                     "working set", "launch", "datasheet");
  const double dram_peak = ds != nullptr ? ds->memory_tbps : 0.0;
  out += bandwidth_row("DRAM read", c.dram_read_tbps, r.dram_read, dram_peak);
  out += bandwidth_row("DRAM write", c.dram_write_tbps, r.dram_write, dram_peak);
  out += bandwidth_row("DRAM copy (read+write)", c.dram_copy_tbps, r.dram_copy, dram_peak);
  out += bandwidth_row("L2 read", c.l2_tbps, r.l2_read, 0.0);
  out += bandwidth_row("L1/shared, all SMs", c.l1_tbps, r.shared_read, 0.0);
  out += fmt::format("  {:<22} {}\n", "L1/shared, per SM", cell(c.l1_per_sm_tbps, [](double v) {
                       return profile::format_bytes_per_s(v * tera);
                     }));
  out += fmt::format("\n  {:<22} {:<28} {:<14} {:<12} {:<9} {}\n", "compute", "best", "median", "",
                     "launch", "datasheet (dense)");
  out += compute_row("FP32 FMA", c.fp32_tflops, r.fp32_fma, peak(datatype::fp32));
  out += compute_row("FP64 FMA", c.fp64_tflops, r.fp64_fma, peak(datatype::fp64));
  out += compute_row("FP16 tensor (cuBLAS)", c.fp16_tensor_tflops, r.fp16_tensor,
                     peak(datatype::fp16_tensor));
  out += compute_row("BF16 tensor (cuBLAS)", c.bf16_tensor_tflops, r.bf16_tensor,
                     peak(datatype::bf16_tensor));
  out += fmt::format("\n  {:<32} {:<18} {:<14} {}\n", "latency", "best", "median", "");
  out += latency_row("launch, stream (host-issued)", c.launch_stream_us, r.launch_stream);
  out += latency_row("launch, stream (queued, device)", c.launch_stream_queued_us,
                     r.launch_stream_queued);
  out += latency_row("launch, CUDA graph", c.launch_graph_us, r.launch_graph);
  out += latency_row("host round trip", c.round_trip_us, r.round_trip);
  auto ridge = [](double v) { return fmt::format("{:.1f} FLOP/byte", v); };
  out +=
      fmt::format("\nridge points (against the DRAM ceiling {}): FP32 {}, BF16 tensor {}\n",
                  cell(c.dram_tbps, [](double v) { return profile::format_bytes_per_s(v * tera); }),
                  cell(c.fp32_ridge_flop_per_byte, ridge), cell(c.bf16_ridge_flop_per_byte, ridge));
  if (ds == nullptr) out += "no datasheet entry for this GPU: datasheet checks skipped\n";
  if (!c.flags.empty()) {
    out += "\nflags:\n";
    for (const auto& f : c.flags)
      out += fmt::format("  {} {}: {}\n", f.severity, f.code, f.message);
  }
  return out;
}

nlohmann::json to_document(const roofline_result& r, const checked_roofline& c) {
  nlohmann::json j = r;
  j["ceilings"] = to_json(c);
  j["check_flags"] = c.flags;
  return j;
}

}  // namespace kj::roofline
