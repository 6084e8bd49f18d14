// The terminal rendering of `kjudge specs`: one block per GPU and the datasheet table.

#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/device/specs.hpp>

namespace kj::device {

namespace {

constexpr double mib = 1024.0 * 1024.0;
constexpr double gib = mib * 1024.0;

double in_mib(std::size_t bytes) {
  return static_cast<double>(bytes) / mib;
}

double in_gib(std::size_t bytes) {
  return static_cast<double>(bytes) / gib;
}

double in_kib(std::size_t bytes) {
  return static_cast<double>(bytes) / 1024.0;
}

void line(std::string& out, std::string_view label, const std::string& value) {
  fmt::format_to(std::back_inserter(out), "  {:<24}{}\n", label, value);
}

std::string peak_text(std::optional<double> p) {
  return p ? fmt::format("{:.1f}", *p) : std::string("-");
}

std::string mhz(std::optional<unsigned> v) {
  return v ? fmt::format("{} MHz", *v) : std::string("n/a");
}

void render_properties(std::string& out, const cuda::device_properties& p, const specs_report& r) {
  fmt::format_to(std::back_inserter(out), "GPU {}: {}\n", p.ordinal, p.name);
  line(out, "uuid", p.uuid);
  line(out, "PCI bus id", p.pci_bus_id);
  line(out, "compute capability", fmt::format("{}.{} (sm_{})", p.cc_major, p.cc_minor, p.arch()));
  line(out, "SMs", std::to_string(p.sm_count));
  line(out, "SM clock (max)", fmt::format("{:.0f} MHz", p.sm_clock_khz / 1000.0));
  line(out, "memory",
       fmt::format("{:.1f} GiB ({} bytes)", in_gib(p.total_memory_bytes), p.total_memory_bytes));
  line(out, "memory clock, bus",
       fmt::format("{:.0f} MHz, {} bits", p.memory_clock_khz / 1000.0, p.memory_bus_width_bits));
  line(out, "L2", fmt::format("{:.1f} MiB", in_mib(p.l2_bytes)));
  line(out, "shared memory",
       fmt::format("{:.0f} KiB per SM, {:.0f} KiB per block (opt-in)", in_kib(p.smem_per_sm_bytes),
                   in_kib(p.smem_per_block_optin_bytes)));
  line(out, "registers per SM", std::to_string(p.regs_per_sm));
  line(out, "threads per SM", std::to_string(p.max_threads_per_sm));
  line(out, "driver / runtime",
       fmt::format("{}CUDA {} / CUDA {}", r.driver_release.empty() ? "" : r.driver_release + ", ",
                   cuda_version_string(r.driver_version), cuda_version_string(r.runtime_version)));
}

void render_nvml(std::string& out, const nvml_readings& n) {
  if (!n.available) {
    line(out, "NVML", n.reason);
    return;
  }
  line(out, "SM clock (NVML)",
       fmt::format("now {}, max {}, default applications {}", mhz(n.sm_clock_mhz),
                   mhz(n.max_sm_clock_mhz), mhz(n.default_sm_clock_mhz)));
  line(out, "power", n.power_watts ? fmt::format("{:.1f} W", *n.power_watts) : "n/a");
  line(out, "temperature", n.temperature_c ? fmt::format("{} C", *n.temperature_c) : "n/a");
  std::string reasons = "n/a";
  if (n.clock_event_reasons)
    reasons = n.clock_event_reasons->empty()
                  ? "none"
                  : fmt::format("{}", fmt::join(*n.clock_event_reasons, ", "));
  line(out, "clock event reasons", reasons);
}

/** The flag `code` that withheld a derived figure, else `otherwise`. */
std::string withheld_or(const derived_peaks& d, std::string_view code, std::string otherwise) {
  for (const auto& f : d.flags)
    if (f.code == code) return "withheld (" + f.code + "): " + f.message;
  return otherwise;
}

void render_derived(std::string& out, const gpu_specs& g) {
  const auto& p = g.properties;
  const auto& d = g.derived;
  out += "  derived from the properties above (not datasheet figures):\n";
  line(out, "  FP32",
       d.fp32_tflops
           ? fmt::format("{:.1f} TFLOP/s (2 x {} SMs x {} lanes x {:.0f} MHz)", *d.fp32_tflops,
                         p.sm_count, *d.fp32_lanes_per_sm, p.sm_clock_khz / 1000.0)
           : withheld_or(d, derived_fp32_code, "unknown for this architecture"));
  line(out, "  DRAM",
       d.dram_tbps ? fmt::format("{:.2f} TB/s (2 x {:.0f} MHz x {} bits / 8)", *d.dram_tbps,
                                 p.memory_clock_khz / 1000.0, p.memory_bus_width_bits)
                   : withheld_or(d, derived_dram_code, "unknown"));
}

void render_entry(std::string& out, const datasheet_entry& e) {
  fmt::format_to(std::back_inserter(out),
                 "  datasheet ({}: {}; dense peaks, no sparsity; source: {}):\n", e.key, e.name,
                 e.document);
  for (const auto t : all_datatypes) {
    const auto p = e.peak(t);
    line(out, fmt::format("  {}", display_name(t)),
         p ? fmt::format("{:.1f} {}", *p, is_integer(t) ? "TOP/s" : "TFLOP/s")
           : std::string("not supported or not listed"));
  }
  line(out, "  memory",
       fmt::format("{:.0f} GiB {}, {:.2f} TB/s", in_gib(e.memory_bytes), e.memory_type,
                   e.memory_tbps));
  line(
      out, "  L2, SMs, boost",
      fmt::format("{:.0f} MiB, {} SMs, {} MHz", in_mib(e.l2_bytes), e.sm_count, e.boost_clock_mhz));
  if (!e.note.empty()) line(out, "  note", e.note);
}

}  // namespace

std::string render_specs_text(const specs_report& r) {
  std::string out;
  if (!r.gpu_available) {
    // The caller says "no GPU" (on stderr); the versions still tell what is installed.
    fmt::format_to(std::back_inserter(out), "driver: {}, runtime: CUDA {}\n",
                   r.driver_version > 0 ? "CUDA " + cuda_version_string(r.driver_version)
                                        : std::string("none"),
                   cuda_version_string(r.runtime_version));
    return out;
  }
  for (const auto& g : r.gpus) {
    render_properties(out, g.properties, r);
    render_nvml(out, g.nvml);
    render_derived(out, g);
    if (g.datasheet != nullptr)
      render_entry(out, *g.datasheet);
    else
      fmt::format_to(std::back_inserter(out), "  no datasheet entry for {}\n", g.properties.name);
    out += "\n";
  }
  return out;
}

std::string render_datasheet_table() {
  std::string out =
      "Datasheet peaks: dense (no sparsity), TFLOP/s (INT8: TOP/s); '-' = not supported or not "
      "listed.\n";
  fmt::format_to(std::back_inserter(out),
                 "{:<15}{:>5}{:>7}{:>6}{:>7}{:>6}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}\n", "key",
                 "SMs", "MHz", "GiB", "TB/s", "L2MiB", "FP64", "FP64T", "FP32", "TF32", "FP16",
                 "BF16", "FP8", "INT8");
  for (const auto& e : datasheet()) {
    fmt::format_to(std::back_inserter(out), "{:<15}{:>5}{:>7}{:>6.0f}{:>7.2f}{:>6.0f}", e.key,
                   e.sm_count, e.boost_clock_mhz, in_gib(e.memory_bytes), e.memory_tbps,
                   in_mib(e.l2_bytes));
    for (const auto t : all_datatypes)
      fmt::format_to(std::back_inserter(out), "{:>8}", peak_text(e.peak(t)));
    out += "\n";
  }
  out += "Sources (source: datasheet):\n";
  for (const auto& e : datasheet()) {
    fmt::format_to(std::back_inserter(out), "  {:<15}{}", e.key, e.document);
    if (!e.note.empty()) fmt::format_to(std::back_inserter(out), "; {}", e.note);
    out += "\n";
  }
  return out;
}

}  // namespace kj::device
