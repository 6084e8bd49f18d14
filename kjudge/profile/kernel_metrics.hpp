#pragma once
/** @file The counter-side data model of `kjudge profile`: what Nsight Compute / CUPTI report for
 *  one kernel, kept as raw counts and cycles. Ratios (hit rates, sectors per request, occupancy,
 *  throughput) are never stored; derive.hpp computes them from these counts, and aggregate.hpp sums
 *  the counts of several kernels before any ratio is taken (docs/measurement-rules.md, rule 13).
 *  The only percentages stored are the few that ncu reports as percentages alone; their names end
 *  in `_pct` and they are std::optional (absent: not collected). See docs/profile-metrics.md.
 *
 *  Counts are doubles: ncu prints some of them as floats (sums of per-unit averages), and a double
 *  holds every integer up to 2^53 exactly, far above any count one forward produces. */

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kj::profile {

/** The floating-point pipes and datatypes that have a roof of their own (rule 15). The first four
 *  are the ordinary (CUDA-core) pipes; `tensor_*` is tensor-core work by input datatype. The dense
 *  datasheet peaks map onto kj::device::datatype as fp64 -> fp64, fp32 -> fp32, tensor_x ->
 *  x_tensor; plain fp16 / bf16 have no datasheet figure. */
enum class flop_type {
  fp64,
  fp32,
  fp16,
  bf16,
  tensor_fp64,
  tensor_tf32,
  tensor_fp16,
  tensor_bf16,
  tensor_fp8,
};

inline constexpr std::size_t flop_type_count = 9;
inline constexpr std::array<flop_type, flop_type_count> all_flop_types{
    flop_type::fp64,        flop_type::fp32,        flop_type::fp16,
    flop_type::bf16,        flop_type::tensor_fp64, flop_type::tensor_tf32,
    flop_type::tensor_fp16, flop_type::tensor_bf16, flop_type::tensor_fp8,
};

/** "fp64", "fp32", ..., "tensor_fp8". */
[[nodiscard]] std::string_view to_string(flop_type t) noexcept;

/** Thread-level arithmetic instructions of one CUDA-core datatype, as ncu counts them
 *  (smsp__sass_thread_inst_executed_op_*_pred_on: a packed HFMA2 is one instruction, the convention
 *  of ncu's own roofline). A fused multiply-add is 2 FLOP (rule 15): see flop(). */
struct scalar_ops {
  double add = 0;  ///< adds and subtracts
  double mul = 0;  ///< multiplies
  double fma = 0;  ///< fused multiply-adds (2 FLOP each)

  [[nodiscard]] double flop() const noexcept { return add + mul + 2.0 * fma; }
};

/** Floating-point work of one kernel, by pipe and datatype. Tensor-core work is given directly in
 *  FLOP (an m x n x k MMA is 2mnk FLOP), as ncu's tensor `ops` counters report it. */
struct flop_counts {
  scalar_ops fp64, fp32, fp16, bf16;
  double tensor_fp64_flop = 0;
  double tensor_tf32_flop = 0;
  double tensor_fp16_flop = 0;
  double tensor_bf16_flop = 0;
  double tensor_fp8_flop = 0;
};

/** FLOP of one type (FMA = 2). */
[[nodiscard]] double flop(const flop_counts& f, flop_type t) noexcept;
/** FLOP of all types together. */
[[nodiscard]] double total_flop(const flop_counts& f) noexcept;
/** The type with the most FLOP (its roof is the one that matters); fp32 when none was counted. */
[[nodiscard]] flop_type dominant_flop_type(const flop_counts& f) noexcept;
/** Tensor-core work (tensor_*), as opposed to the CUDA-core pipes. */
[[nodiscard]] constexpr bool is_tensor(flop_type t) noexcept {
  return t == flop_type::tensor_fp64 || t == flop_type::tensor_tf32 ||
         t == flop_type::tensor_fp16 || t == flop_type::tensor_bf16 || t == flop_type::tensor_fp8;
}

/** Grid or block dimensions of a launch. */
struct launch_dims {
  std::uint32_t x = 1, y = 1, z = 1;

  [[nodiscard]] std::uint64_t count() const noexcept {
    return std::uint64_t{x} * std::uint64_t{y} * std::uint64_t{z};
  }
};

/** One kernel launch as the profiler saw it. Every field is a raw count, a size or a cycle count
 *  unless its name ends in `_pct`. The ncu metric each field comes from is named beside it; a
 *  field the profiler did not collect stays 0 (a count) or absent (a percentage), and the derived
 *  metric that needs it is reported as "no data", never as 0%. */
struct kernel_metrics {
  std::string name;            ///< the symbol as launched (mangled for C++ kernels)
  std::string demangled_name;  ///< for people
  double duration_ns = 0;      ///< gpu__time_duration.sum
  /** Metrics kjudge reads that ncu did not report for this kernel: the parser lists the values
   *  its row left empty ("" or "n/a"), the report adds the columns the whole table lacks. Their
   *  fields stay 0 / absent, and the report withholds what needs them (unreported.hpp). A total
   *  holds the union of its kernels'. */
  std::vector<std::string> unreported_metrics;

  launch_dims grid, block;
  std::uint32_t registers_per_thread = 0;  ///< launch__registers_per_thread
  double shared_mem_per_block_bytes = 0;   ///< static + dynamic, launch__shared_mem_per_block

  /** Blocks per SM each resource allows (launch__occupancy_limit_registers, _shared_mem, _warps,
   *  _blocks); 0 = not collected. The smallest is the occupancy limiter. */
  std::uint32_t occupancy_limit_registers = 0;
  std::uint32_t occupancy_limit_shared_mem = 0;
  std::uint32_t occupancy_limit_warps = 0;
  std::uint32_t occupancy_limit_blocks = 0;
  double waves_per_sm = 0;  ///< launch__waves_per_multiprocessor; 0 = not collected

  // Device facts the ratios need (from device__attribute_*; the same for every kernel of a run).
  std::uint32_t sm_count = 0;          ///< device__attribute_multiprocessor_count
  std::uint32_t max_warps_per_sm = 0;  ///< device__attribute_max_warps_per_multiprocessor

  // Memory traffic. A sector is 32 bytes.
  double dram_read_bytes = 0;        ///< dram__bytes_read.sum
  double dram_write_bytes = 0;       ///< dram__bytes_write.sum
  double l1_hit_sectors = 0;         ///< l1tex__t_sectors_lookup_hit.sum
  double l1_sectors = 0;             ///< l1tex__t_sectors.sum
  double l2_hit_sectors = 0;         ///< lts__t_sectors_lookup_hit.sum
  double l2_sectors = 0;             ///< lts__t_sectors.sum
  double global_load_requests = 0;   ///< l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
  double global_load_sectors = 0;    ///< l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  double global_store_requests = 0;  ///< l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
  double global_store_sectors = 0;   ///< l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum

  // SM activity and occupancy inputs.
  double sm_active_cycles = 0;  ///< sm__cycles_active.sum: cycles with a warp resident, all SMs
  double elapsed_cycles = 0;    ///< sm__cycles_elapsed.max: the kernel's length in SM cycles
  double warps_active = 0;      ///< sm__warps_active.sum: resident warps summed over active cycles
  /** launch__occupancy_limit based: ncu gives this only as a percentage. */
  std::optional<double> theoretical_occupancy_pct;
  /** ncu's SOL figures, given only as percentages of peak (sm__throughput and
   *  gpu__compute_memory_throughput, .avg.pct_of_peak_sustained_elapsed). */
  std::optional<double> sm_throughput_pct;
  std::optional<double> memory_throughput_pct;

  flop_counts flops;

  double instructions_issued = 0;  ///< smsp__inst_issued.sum, warp-level
  /** Warp-level instructions executed per pipe ("alu", "fma", "lsu", "tensor", ...):
   *  sm__inst_executed_pipe_<name>.sum. */
  std::map<std::string, double> instructions_per_pipe;
  /** Warp-cycles spent stalled, per reason as ncu names it ("long_scoreboard", "barrier", ...):
   *  smsp__warps_issue_stalled_<reason>.sum. Cycles, never percentages or per-instruction ratios;
   *  "selected" (issuing) is not a stall and does not belong here. */
  std::map<std::string, double> stall_cycles;

  [[nodiscard]] double dram_bytes() const noexcept { return dram_read_bytes + dram_write_bytes; }
  /** The demangled name when there is one, else the symbol. */
  [[nodiscard]] const std::string& display_name() const noexcept {
    return demangled_name.empty() ? name : demangled_name;
  }
};

/** Sum of the kernels' durations, ns. */
[[nodiscard]] double kernel_time_sum_ns(const std::vector<kernel_metrics>& kernels) noexcept;

}  // namespace kj::profile
