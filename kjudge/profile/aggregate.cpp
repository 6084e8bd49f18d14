#include <kjudge/profile/aggregate.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/unreported.hpp>

namespace kj::profile {

namespace {

void add_ops(scalar_ops& into, const scalar_ops& from) {
  into.add += from.add;
  into.mul += from.mul;
  into.fma += from.fma;
}

void add_flops(flop_counts& into, const flop_counts& from) {
  add_ops(into.fp64, from.fp64);
  add_ops(into.fp32, from.fp32);
  add_ops(into.fp16, from.fp16);
  add_ops(into.bf16, from.bf16);
  into.tensor_fp64_flop += from.tensor_fp64_flop;
  into.tensor_tf32_flop += from.tensor_tf32_flop;
  into.tensor_fp16_flop += from.tensor_fp16_flop;
  into.tensor_bf16_flop += from.tensor_bf16_flop;
  into.tensor_fp8_flop += from.tensor_fp8_flop;
}

void add_map(std::map<std::string, double>& into, const std::map<std::string, double>& from) {
  for (const auto& [key, value] : from) into[key] += value;
}

/** The one value every kernel that reports `value` (non-zero) agrees on. */
void same_device_fact(std::uint32_t& total, std::uint32_t value, const char* what) {
  if (value == 0) return;
  if (total != 0 && total != value)
    KJ_THROW(error_kind::usage, "kernels from different devices cannot be aggregated: {} {} vs {}",
             what, total, value);
  total = value;
}

}  // namespace

std::optional<double> duration_weighted_pct(std::span<const kernel_metrics> kernels,
                                            std::optional<double> kernel_metrics::*field) {
  double weighted = 0, weight = 0;
  for (const auto& k : kernels) {
    const auto& v = k.*field;
    if (!v) continue;
    weighted += *v * k.duration_ns;
    weight += k.duration_ns;
  }
  if (weight <= 0) return std::nullopt;
  return weighted / weight;
}

kernel_metrics aggregate(std::span<const kernel_metrics> kernels) {
  kernel_metrics t;
  t.name = "total";
  t.demangled_name = fmt::format("{} kernels", kernels.size());
  t.grid = {0, 0, 0};
  t.block = {0, 0, 0};
  for (const auto& k : kernels) {
    same_device_fact(t.sm_count, k.sm_count, "SM count");
    same_device_fact(t.max_warps_per_sm, k.max_warps_per_sm, "max warps per SM");
    t.duration_ns += k.duration_ns;
    t.dram_read_bytes += k.dram_read_bytes;
    t.dram_write_bytes += k.dram_write_bytes;
    t.l1_hit_sectors += k.l1_hit_sectors;
    t.l1_sectors += k.l1_sectors;
    t.l2_hit_sectors += k.l2_hit_sectors;
    t.l2_sectors += k.l2_sectors;
    t.global_load_requests += k.global_load_requests;
    t.global_load_sectors += k.global_load_sectors;
    t.global_store_requests += k.global_store_requests;
    t.global_store_sectors += k.global_store_sectors;
    t.sm_active_cycles += k.sm_active_cycles;
    t.elapsed_cycles += k.elapsed_cycles;
    t.warps_active += k.warps_active;
    t.instructions_issued += k.instructions_issued;
    add_flops(t.flops, k.flops);
    add_map(t.instructions_per_pipe, k.instructions_per_pipe);
    add_map(t.stall_cycles, k.stall_cycles);
    add_unreported(t.unreported_metrics, k.unreported_metrics);
  }
  t.theoretical_occupancy_pct =
      duration_weighted_pct(kernels, &kernel_metrics::theoretical_occupancy_pct);
  t.sm_throughput_pct = duration_weighted_pct(kernels, &kernel_metrics::sm_throughput_pct);
  t.memory_throughput_pct = duration_weighted_pct(kernels, &kernel_metrics::memory_throughput_pct);
  return t;
}

stall_breakdown break_down_stalls(const std::map<std::string, double>& stall_cycles,
                                  double instructions_issued) {
  stall_breakdown b;
  b.instructions_issued = instructions_issued;
  for (const auto& [reason, cycles] : stall_cycles) b.total_stall_cycles += cycles;
  for (const auto& [reason, cycles] : stall_cycles) {
    if (b.total_stall_cycles > 0) b.share_pct[reason] = 100.0 * cycles / b.total_stall_cycles;
    if (instructions_issued > 0)
      b.cycles_per_issued_instruction[reason] = cycles / instructions_issued;
  }
  return b;
}

stall_breakdown break_down_stalls(const kernel_metrics& k) {
  return break_down_stalls(k.stall_cycles, k.instructions_issued);
}

}  // namespace kj::profile
