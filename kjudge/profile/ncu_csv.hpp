#pragma once
/** @file Reader of Nsight Compute's raw CSV page (`ncu --csv --page raw --print-units base --nvtx
 *  --metrics <ncu_metric_list()>`): one kernel_metrics per profiled kernel, with the NVTX push/pop
 *  ranges its launch ran inside, so that the kernels of the reference and of the candidate can be
 *  told apart (ranges `kjudge_reference` / `kjudge_candidate`).
 *
 *  Input: ncu's stdout as text. Lines before the table (`==PROF==` / `==WARNING==` log lines, the
 *  application's own output) are skipped; the table starts at the line beginning `"ID",`. Row 1 is
 *  the column names, row 2 the units, then one row per kernel; fields follow RFC 4180 quoting.
 *  Numbers may carry thousands separators ("137,438,953,472"); an empty or "n/a" value is "not
 *  collected" (the field stays 0 / absent). Values in scaled units (usecond, Kbyte, ...) are
 *  converted to the base units kernel_metrics uses (ns, bytes). Metric to field map:
 *  kernel_metrics.hpp and docs/profile-metrics.md. Tests: tests/unit/profile/ncu_csv_test.cpp
 *  against a real H200 capture (tests/data/ncu/). */

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/profile/kernel_metrics.hpp>

namespace kj::profile {

/** NVTX range names kjudge pushes around each side's forward. */
inline constexpr std::string_view ncu_reference_range = "kjudge_reference";
inline constexpr std::string_view ncu_candidate_range = "kjudge_candidate";

/** The ncu metrics (table columns) behind kernel_metrics' fields that figures are derived from:
 *  one name for the parser's table and for the report, which withholds every figure whose
 *  counter ncu did not report (unreported.hpp). */
namespace ncu_metric {
inline constexpr std::string_view duration = "gpu__time_duration.sum";
inline constexpr std::string_view registers = "launch__registers_per_thread";
inline constexpr std::string_view shared_static = "launch__shared_mem_per_block_static";
inline constexpr std::string_view shared_dynamic = "launch__shared_mem_per_block_dynamic";
inline constexpr std::string_view sm_count = "device__attribute_multiprocessor_count";
inline constexpr std::string_view max_warps = "device__attribute_max_warps_per_multiprocessor";
inline constexpr std::string_view dram_read = "dram__bytes_read.sum";
inline constexpr std::string_view dram_write = "dram__bytes_write.sum";
inline constexpr std::string_view l1_hit_sectors = "l1tex__t_sectors_lookup_hit.sum";
inline constexpr std::string_view l1_sectors = "l1tex__t_sectors.sum";
inline constexpr std::string_view l2_hit_sectors = "lts__t_sectors_lookup_hit.sum";
inline constexpr std::string_view l2_sectors = "lts__t_sectors.sum";
inline constexpr std::string_view load_requests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr std::string_view load_sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr std::string_view store_requests =
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
inline constexpr std::string_view store_sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
inline constexpr std::string_view sm_active_cycles = "sm__cycles_active.sum";
inline constexpr std::string_view elapsed_cycles = "sm__cycles_elapsed.max";
inline constexpr std::string_view warps_active = "sm__warps_active.sum";
inline constexpr std::string_view theoretical_occupancy = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr std::string_view sm_sol = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view memory_sol =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view instructions_issued = "smsp__inst_issued.sum";
inline constexpr std::string_view fp32_add = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr std::string_view fp32_mul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr std::string_view fp32_fma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr std::string_view fp64_add = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr std::string_view fp64_mul = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr std::string_view fp64_fma = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr std::string_view fp16_add = "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr std::string_view fp16_mul = "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum";
inline constexpr std::string_view fp16_fma = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum";
inline constexpr std::string_view tensor_fp16 = "sm__ops_path_tensor_src_fp16.sum";
inline constexpr std::string_view tensor_bf16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
inline constexpr std::string_view tensor_tf32 = "sm__ops_path_tensor_src_tf32_dst_fp32.sum";
inline constexpr std::string_view tensor_fp64 = "sm__ops_path_tensor_src_fp64.sum";
inline constexpr std::string_view tensor_fp8 = "sm__ops_path_tensor_src_fp8.sum";
}  // namespace ncu_metric

/** The counters of one FLOP type (what flop() adds up for it); none for bf16, which has no
 *  CUDA-core counter in the list. */
[[nodiscard]] std::vector<std::string_view> ncu_flop_metrics(flop_type t);

/** One profiled kernel: the NVTX push/pop ranges around its launch (outermost first) and its
 *  counters. */
struct ncu_kernel {
  std::vector<std::string> nvtx_ranges;
  std::uint32_t id = 0;      ///< ncu's "ID": profiling order, which is launch order
  std::uint32_t stream = 0;  ///< ncu's "Stream" id (0 when not printed)
  kernel_metrics metrics;
};

/** Every kernel of one ncu run, in the order ncu listed them. */
struct ncu_report {
  std::vector<ncu_kernel> kernels;
  /** Metrics kernel_metrics wants that no column had (their fields stay 0 / absent). */
  std::vector<std::string> missing_metrics;
  std::string device_name;  ///< device__attribute_display_name of the first kernel ("NVIDIA H200")
  /** Why a kernel's NVTX range stack could not be read to its end (one entry a kernel; its
   *  ranges before that point were kept). */
  std::vector<std::string> nvtx_unreadable;
};

/** Parses ncu's raw CSV page. Throws kj::error (protocol) with the line, column and field on
 *  malformed input: no table header, a row with the wrong number of fields, an unterminated
 *  quote, a non-numeric value in a metric kernel_metrics reads, an unknown unit on such a metric,
 *  not an NVTX range stack that cannot be read to its end (nvtx_unreadable). When ncu reports "No
 * kernels were profiled" and prints no table, the report is empty (no kernels), as it is for a
 * table with no kernel rows. */
[[nodiscard]] ncu_report parse_ncu_raw_csv(std::string_view text);

/** The explicit `--metrics` list kjudge passes to ncu (comma-join it). Launch (`launch__*`) and
 *  device (`device__attribute_*`) metrics are not in it: ncu prints them anyway. The names are
 *  those of Hopper (CC 9.0) with ncu 2025.3; on another architecture intersect the list with
 *  `ncu --query-metrics` first (ncu fails on a name the device lacks, e.g. the gmma stall before
 *  Hopper). Besides the counters kernel_metrics reads, it holds three of ncu's own ratios
 *  (achieved occupancy, L1 and L2 hit rate) so that derive() can be cross-checked. */
[[nodiscard]] const std::vector<std::string>& ncu_metric_list();

/** The start of the stall reasons' metrics (`smsp__warps_issue_stalled_<reason>.sum`). */
inline constexpr std::string_view ncu_stall_prefix = "smsp__warps_issue_stalled_";

/** The metrics of the kernels whose NVTX stack holds a range named `range` (at any depth), in
 *  launch order. */
[[nodiscard]] std::vector<kernel_metrics> kernels_in_range(const ncu_report& r,
                                                           std::string_view range);

/** ncu's table as printed: column names, units, and the raw text of every field. Lower level
 *  than parse_ncu_raw_csv(); for callers that want a column kernel_metrics does not hold. */
struct ncu_table {
  std::vector<std::string> columns;
  std::vector<std::string> units;              ///< one per column; "" when unitless
  std::vector<std::vector<std::string>> rows;  ///< one per kernel, each columns.size() long
  std::vector<std::size_t> row_lines;          ///< 1-based input line where each row starts
  bool no_kernels_profiled = false;            ///< no table, and ncu said none were profiled

  /** Index of the first column named `name`; absent when there is none. */
  [[nodiscard]] std::optional<std::size_t> column(std::string_view name) const;
};

/** Splits ncu's output into the table; throws as parse_ncu_raw_csv() does for CSV errors. */
[[nodiscard]] ncu_table read_ncu_table(std::string_view text);

/** One numeric field as ncu prints it ("1,536", "298.67", "0"): absent when empty or "n/a".
 *  Throws kj::error (protocol) when the text is not a number. */
[[nodiscard]] std::optional<double> parse_ncu_number(std::string_view field);

}  // namespace kj::profile
