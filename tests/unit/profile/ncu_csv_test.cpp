// Tests of the Nsight Compute raw-CSV parser: a real H200 capture (tests/data/ncu/README.md),
// whose counters go through aggregate() + derive() and are checked against ncu's own ratios, and
// hand-made inputs for the format's corners and for malformed output.

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/aggregate.hpp>
#include <kjudge/profile/derive.hpp>
#include <kjudge/profile/invariants.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/profile/unreported.hpp>

namespace kj::profile {
namespace {

// Row indices of the fixture: 14 reference kernels (0-13; 13 is the cuBLAS fp32 GEMM), then the
// candidate (14), then the 4096^3 bf16 GEMM in kjudge_extra (15).
constexpr std::size_t reduce_row = 2;
constexpr std::size_t sgemm_row = 13;
constexpr std::size_t candidate_row = 14;
constexpr std::size_t gemm_row = 15;

const std::string& fixture_text() {
  static const std::string text = [] {
    std::ifstream in(std::string(KJ_TEST_DATA_DIR) + "/ncu/quantvla_probe_raw.csv",
                     std::ios::binary);
    EXPECT_TRUE(in) << "fixture missing";
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

const ncu_report& fixture() {
  static const ncu_report r = parse_ncu_raw_csv(fixture_text());
  return r;
}

const ncu_table& fixture_table() {
  static const ncu_table t = read_ncu_table(fixture_text());
  return t;
}

/** ncu's own value of `column` for the kernel in `row`. */
double ncu_value(std::size_t row, std::string_view column) {
  const auto& t = fixture_table();
  const auto c = t.column(column);
  EXPECT_TRUE(c.has_value()) << column;
  return parse_ncu_number(t.rows.at(row).at(c.value_or(0))).value_or(-1.0);
}

const kernel_metrics& kernel(std::size_t row) {
  return fixture().kernels.at(row).metrics;
}

/** H200 roofs: datasheet DRAM, FP32 and dense BF16 tensor peaks; measured L2, L1 and DRAM. */
ceilings h200() {
  ceilings c;
  c.dram.datasheet_bytes_per_s = 4.8e12;
  c.dram.measured_bytes_per_s = 4.64e12;
  c.l2.measured_bytes_per_s = 8.89e12;
  c.l1.measured_bytes_per_s = 32.9e12;
  c.at(flop_type::fp32).datasheet_dense_flop_per_s = 66.9e12;
  c.at(flop_type::tensor_bf16).datasheet_dense_flop_per_s = 989.4e12;
  return c;
}

std::string error_flags(const derived_metrics& d) {
  std::string out;
  for (const auto& f : d.flags())
    if (f.severity == severity_error) out += f.code + ": " + f.message + "\n";
  return out;
}

/** The message of the kj::error (protocol) that parsing `text` throws; "" and a failure if none. */
std::string parse_error(std::string_view text) {
  try {
    (void)parse_ncu_raw_csv(text);
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), error_kind::protocol) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// The real capture.

TEST(ncu_csv_fixture, sixteen_kernels_split_by_nvtx_range) {
  const auto& r = fixture();
  ASSERT_EQ(r.kernels.size(), 16U);
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    EXPECT_EQ(r.kernels[i].id, i);
    EXPECT_EQ(r.kernels[i].stream, 7U);
  }
  EXPECT_EQ(r.kernels[0].nvtx_ranges, std::vector<std::string>{"kjudge_reference"});
  EXPECT_EQ(kernels_in_range(r, ncu_reference_range).size(), 14U);
  EXPECT_EQ(kernels_in_range(r, ncu_candidate_range).size(), 1U);
  EXPECT_EQ(kernels_in_range(r, "kjudge_extra").size(), 1U);
  EXPECT_TRUE(kernels_in_range(r, "kjudge").empty());  // whole names only
  EXPECT_EQ(r.device_name, "NVIDIA H200");
  EXPECT_TRUE(r.missing_metrics.empty()) << r.missing_metrics.front();
}

TEST(ncu_csv_fixture, candidate_launch_and_counters) {
  const auto cand = kernels_in_range(fixture(), ncu_candidate_range);
  ASSERT_EQ(cand.size(), 1U);
  const kernel_metrics& k = cand[0];
  EXPECT_EQ(k.name,
            "void <unnamed>::quantvla_kernel<<unnamed>::tile_cfg<16, 32, 128, 4, 4, 8>, 1>"
            "(<unnamed>::qv_args)");
  EXPECT_EQ(k.demangled_name, k.name);
  EXPECT_DOUBLE_EQ(k.duration_ns, 7424.0);
  EXPECT_EQ(k.grid.count(), 128U);
  EXPECT_EQ(k.block.x, 256U);
  EXPECT_EQ(k.block.count(), 256U);
  EXPECT_EQ(k.registers_per_thread, 64U);
  EXPECT_DOUBLE_EQ(k.shared_mem_per_block_bytes, 336.0 + 50688.0);  // static + dynamic
  EXPECT_EQ(k.sm_count, 132U);
  EXPECT_EQ(k.max_warps_per_sm, 64U);
  EXPECT_DOUBLE_EQ(k.dram_read_bytes, 390912.0);
  EXPECT_DOUBLE_EQ(k.dram_write_bytes, 0.0);
  EXPECT_DOUBLE_EQ(k.l2_sectors, ncu_value(candidate_row, "lts__t_sectors.sum"));
  EXPECT_DOUBLE_EQ(k.l2_hit_sectors, ncu_value(candidate_row, "lts__t_sectors_lookup_hit.sum"));
  EXPECT_DOUBLE_EQ(k.global_load_requests, 7552.0);
  EXPECT_DOUBLE_EQ(k.global_load_sectors, 121787.0);
  EXPECT_DOUBLE_EQ(k.global_store_requests, 2176.0);
  EXPECT_DOUBLE_EQ(k.global_store_sectors, 8320.0);
  EXPECT_DOUBLE_EQ(k.sm_active_cycles, 1412014.0);
  EXPECT_DOUBLE_EQ(k.elapsed_cycles, 14352.0);
  EXPECT_DOUBLE_EQ(k.warps_active, 12873698.0);
  EXPECT_DOUBLE_EQ(k.instructions_issued, 1294976.0);
  ASSERT_TRUE(k.sm_throughput_pct.has_value());
  EXPECT_DOUBLE_EQ(*k.sm_throughput_pct, 17.13);
  ASSERT_TRUE(k.memory_throughput_pct.has_value());
  EXPECT_DOUBLE_EQ(*k.memory_throughput_pct, 12.93);
  // CUDA-core FP: thread-level instructions.
  EXPECT_DOUBLE_EQ(k.flops.fp32.add, 1052672.0);
  EXPECT_DOUBLE_EQ(k.flops.fp32.mul, 786560.0);
  EXPECT_DOUBLE_EQ(k.flops.fp32.fma, 9713664.0);
  EXPECT_DOUBLE_EQ(k.flops.fp16.fma, 32768.0);
  EXPECT_DOUBLE_EQ(k.flops.tensor_fp16_flop + k.flops.tensor_bf16_flop, 0.0);
}

TEST(ncu_csv_fixture, occupancy_limits_and_waves) {
  const kernel_metrics& c = kernel(candidate_row);
  ASSERT_TRUE(c.theoretical_occupancy_pct.has_value());
  EXPECT_DOUBLE_EQ(*c.theoretical_occupancy_pct, 50.0);
  EXPECT_EQ(c.occupancy_limit_registers, 4U);
  EXPECT_EQ(c.occupancy_limit_shared_mem, 4U);
  EXPECT_EQ(c.occupancy_limit_warps, 8U);
  EXPECT_EQ(c.occupancy_limit_blocks, 32U);
  EXPECT_DOUBLE_EQ(c.waves_per_sm, 0.24);

  const kernel_metrics& g = kernel(gemm_row);
  ASSERT_TRUE(g.theoretical_occupancy_pct.has_value());
  EXPECT_DOUBLE_EQ(*g.theoretical_occupancy_pct, 18.75);
  EXPECT_EQ(g.occupancy_limit_registers, 1U);
  EXPECT_EQ(g.occupancy_limit_shared_mem, 1U);
  EXPECT_DOUBLE_EQ(g.waves_per_sm, 1.0);

  const kernel_metrics& r = kernel(reduce_row);
  EXPECT_EQ(r.occupancy_limit_shared_mem, 10U);
  EXPECT_DOUBLE_EQ(r.shared_mem_per_block_bytes, 16.0 + 2048.0);  // dynamic printed "2,048"
}

TEST(ncu_csv_fixture, gemm_tensor_counter_is_flop_two_per_mac) {
  const kernel_metrics& g = kernel(gemm_row);
  EXPECT_EQ(g.name, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(fixture().kernels[gemm_row].nvtx_ranges, std::vector<std::string>{"kjudge_extra"});
  const double n = 4096.0;
  EXPECT_DOUBLE_EQ(g.flops.tensor_bf16_flop, 2.0 * n * n * n);  // "137,438,953,472"
  EXPECT_DOUBLE_EQ(total_flop(g.flops), 2.0 * n * n * n);
  EXPECT_DOUBLE_EQ(g.duration_ns, 176896.0);
  EXPECT_EQ(g.grid.x, 2U);
  EXPECT_EQ(g.grid.y, 66U);
  EXPECT_EQ(g.block.x, 384U);
  EXPECT_DOUBLE_EQ(g.warps_active, 330690214.0);
  EXPECT_DOUBLE_EQ(g.dram_write_bytes, 28056832.0);
  EXPECT_DOUBLE_EQ(kernel(sgemm_row).flops.fp32.fma, 8454144.0);
}

TEST(ncu_csv_fixture, stalls_exclude_selected_and_pipes_are_top_level) {
  const kernel_metrics& k = kernel(candidate_row);
  EXPECT_EQ(k.stall_cycles.count("selected"), 0U);  // issuing, not a stall
  EXPECT_EQ(k.stall_cycles.size(), 18U);
  EXPECT_DOUBLE_EQ(k.stall_cycles.at("long_scoreboard"), 598394.0);
  EXPECT_DOUBLE_EQ(k.stall_cycles.at("barrier"), 3572297.0);
  EXPECT_DOUBLE_EQ(k.stall_cycles.at("not_selected"), 279709.0);

  EXPECT_EQ(k.instructions_per_pipe.size(), 14U);
  EXPECT_DOUBLE_EQ(k.instructions_per_pipe.at("fma"), 569856.0);
  EXPECT_DOUBLE_EQ(k.instructions_per_pipe.at("alu"), 346110.0);
  EXPECT_DOUBLE_EQ(k.instructions_per_pipe.at("tensor"), 1024.0);
  for (const char* breakdown :
       {"fma_type_fp16", "xu_realtime", "cbu_pred_on_any", "tensor_op_hmma"})
    EXPECT_EQ(k.instructions_per_pipe.count(breakdown), 0U) << breakdown;
}

TEST(ncu_csv_fixture, metric_list_names_columns_of_the_capture) {
  const auto& list = ncu_metric_list();
  const auto& t = fixture_table();
  for (const auto& m : list) {
    EXPECT_TRUE(t.column(m).has_value()) << m;
    EXPECT_FALSE(m.starts_with("launch__") || m.starts_with("device__")) << m;
    EXPECT_EQ(std::count(list.begin(), list.end(), m), 1) << m;
  }
  EXPECT_NE(std::find(list.begin(), list.end(), "gpu__time_duration.sum"), list.end());
  EXPECT_EQ(std::find(list.begin(), list.end(), "smsp__warps_issue_stalled_selected.sum"),
            list.end());
}

TEST(ncu_csv_fixture, header_and_units_only_is_an_empty_report) {
  const std::string& text = fixture_text();
  const std::size_t header = text.find("\"ID\",");
  const std::size_t units_end = text.find('\n', text.find('\n', header) + 1);
  const auto r = parse_ncu_raw_csv(std::string_view(text).substr(0, units_end + 1));
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_TRUE(r.missing_metrics.empty());
}

// ---------------------------------------------------------------------------------------------
// The derived metrics of the real data: invariants hold, and the formulas agree with ncu's ratios.

TEST(ncu_csv_fixture, no_derived_metric_of_real_data_breaks_an_invariant) {
  const ceilings c = h200();
  ASSERT_FALSE(has_error(check_ceilings(c)));
  for (const auto& k : fixture().kernels)
    EXPECT_EQ(error_flags(derive(k.metrics, c)), "") << "kernel " << k.id;
  for (const char* range : {"kjudge_reference", "kjudge_candidate", "kjudge_extra"}) {
    const auto kernels = kernels_in_range(fixture(), range);
    EXPECT_EQ(error_flags(derive(aggregate(kernels), c)), "") << range;
  }
}

TEST(ncu_csv_fixture, achieved_occupancy_and_hit_rates_match_ncu) {
  const ceilings c = h200();
  const auto d = derive(kernel(candidate_row), c);
  ASSERT_TRUE(d.achieved_occupancy_pct.ok());
  EXPECT_NEAR(d.achieved_occupancy_pct.value(), 14.25, 0.05);
  ASSERT_TRUE(d.l2_hit_rate_pct.ok());
  EXPECT_NEAR(d.l2_hit_rate_pct.value(), 88.82, 0.05);
  ASSERT_TRUE(d.theoretical_occupancy_pct.ok());
  EXPECT_DOUBLE_EQ(d.theoretical_occupancy_pct.value(), 50.0);

  for (std::size_t row = 0; row < fixture().kernels.size(); ++row) {
    const auto dk = derive(kernel(row), c);
    ASSERT_TRUE(dk.achieved_occupancy_pct.ok()) << row;
    EXPECT_NEAR(dk.achieved_occupancy_pct.value(),
                ncu_value(row, "sm__warps_active.avg.pct_of_peak_sustained_active"), 0.05)
        << row;
    ASSERT_TRUE(dk.l2_hit_rate_pct.ok()) << row;
    EXPECT_NEAR(dk.l2_hit_rate_pct.value(), ncu_value(row, "lts__t_sector_hit_rate.pct"), 0.05)
        << row;
    if (kernel(row).l1_sectors > 0) {
      ASSERT_TRUE(dk.l1_hit_rate_pct.ok()) << row;
      EXPECT_NEAR(dk.l1_hit_rate_pct.value(), ncu_value(row, "l1tex__t_sector_hit_rate.pct"), 0.05)
          << row;
    }
  }
}

TEST(ncu_csv_fixture, bottleneck_classes_of_real_kernels) {
  const ceilings c = h200();
  // The bf16 GEMM runs its tensor cores at 78.5% of the dense peak (ncu: SM 90.3%).
  const auto g = derive(kernel(gemm_row), c);
  ASSERT_TRUE(g.flop_pct(flop_type::tensor_bf16).ok());
  EXPECT_NEAR(g.flop_pct(flop_type::tensor_bf16).value(),
              100.0 * 2.0 * 4096.0 * 4096.0 * 4096.0 / 176896e-9 / 989.4e12, 1e-9);
  EXPECT_EQ(g.bound.bound, bottleneck::compute_bound) << g.bound.reason;
  // The candidate: SM 17.1%, memory 12.9% -> neither unit is busy.
  EXPECT_EQ(derive(kernel(candidate_row), c).bound.bound, bottleneck::latency_bound);
  const auto ref = aggregate(kernels_in_range(fixture(), ncu_reference_range));
  EXPECT_DOUBLE_EQ(ref.duration_ns, 56096.0);  // the 14 durations summed
}

// ---------------------------------------------------------------------------------------------
// Hand-made inputs.

constexpr std::string_view mini_header =
    "\"ID\",\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\","
    "\"Kernel Name\",\"Stream\",\"Grid Size\",\"Block Size\",\"gpu__time_duration.sum\","
    "\"dram__bytes_read.sum\",\"launch__shared_mem_per_block_dynamic\","
    "\"sm__maximum_warps_per_active_cycle_pct\"\n";

std::string mini(std::string_view units, std::string_view row) {
  return std::string("==PROF== Connected to process 77\napp output, with commas\n") +
         std::string(mini_header) + std::string(units) + std::string(row);
}

constexpr std::string_view base_units =
    "\"\",\"\",\"\",\"\",\"\",\"\",\"ns\",\"byte\",\"byte/block\",\"%\"\n";

TEST(ncu_csv_hand_made, quoting_nested_ranges_scaled_units_and_tuples) {
  const std::string text = mini(
      "\"\",\"\",\"\",\"\",\"\",\"\",\"usecond\",\"Kbyte\",\"Kbyte/block\",\"%\"\r\n",
      "\"0\",\"77  \"\"<default domain>:outer:none:none:none:none:none:none\"\" \"\"<default "
      "domain>:kjudge_candidate:none:none:none:none:none:none\"\" \",\"void k<\"\"a,b\"\">(int)\","
      "\"3\",\"(4, 2, 1)\",\"(32, 1, 1)\",\"1.5\",\"2,048\",\"1\",\"n/a\"\r\n"
      "==PROF== Disconnected from process 77\n");
  const auto r = parse_ncu_raw_csv(text);
  ASSERT_EQ(r.kernels.size(), 1U);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.nvtx_ranges, (std::vector<std::string>{"outer", "kjudge_candidate"}));
  EXPECT_EQ(k.stream, 3U);
  EXPECT_EQ(k.metrics.name, "void k<\"a,b\">(int)");
  EXPECT_DOUBLE_EQ(k.metrics.duration_ns, 1500.0);         // 1.5 usecond
  EXPECT_DOUBLE_EQ(k.metrics.dram_read_bytes, 2048000.0);  // 2,048 Kbyte
  EXPECT_DOUBLE_EQ(k.metrics.shared_mem_per_block_bytes, 1000.0);
  EXPECT_FALSE(k.metrics.theoretical_occupancy_pct.has_value());  // n/a: not collected
  EXPECT_EQ(k.metrics.grid.x, 4U);
  EXPECT_EQ(k.metrics.grid.y, 2U);
  EXPECT_EQ(k.metrics.block.count(), 32U);
  EXPECT_EQ(kernels_in_range(r, "outer").size(), 1U);
  EXPECT_EQ(kernels_in_range(r, ncu_candidate_range).size(), 1U);
  EXPECT_TRUE(kernels_in_range(r, ncu_reference_range).empty());
  // Columns the mini table lacks are reported, the dims it has as tuples are not.
  const auto& miss = r.missing_metrics;
  EXPECT_NE(std::find(miss.begin(), miss.end(), "lts__t_sectors.sum"), miss.end());
  EXPECT_EQ(std::find(miss.begin(), miss.end(), "launch__grid_dim_x"), miss.end());
  EXPECT_EQ(std::find(miss.begin(), miss.end(), "gpu__time_duration.sum"), miss.end());
}

TEST(ncu_csv_hand_made, no_table_is_an_error_unless_nothing_was_profiled) {
  const std::string msg = parse_error(
      "==PROF== Connected to process 1\n==ERROR== Failed to find metric foo__bar\nhello\n");
  EXPECT_TRUE(contains(msg, "no line starts with \"ID\"")) << msg;
  EXPECT_TRUE(contains(msg, "Failed to find metric foo__bar")) << msg;
  EXPECT_TRUE(contains(parse_error(""), "no Nsight Compute table"));

  const auto r =
      parse_ncu_raw_csv("==PROF== Disconnected\n==WARNING== No kernels were profiled.\n");
  EXPECT_TRUE(r.kernels.empty());
}

TEST(ncu_csv_hand_made, truncated_row_names_line_and_field_counts) {
  const std::string msg = parse_error(mini(base_units, "\"0\",\"\",\"k\",\"7\"\n"));
  EXPECT_TRUE(contains(msg, "line 5")) << msg;
  EXPECT_TRUE(contains(msg, "4 fields, the header 10")) << msg;
  EXPECT_TRUE(contains(parse_error(std::string(mini_header)), "no units row"));
}

TEST(ncu_csv_hand_made, unterminated_quote_names_where_it_opened) {
  const std::string msg = parse_error(mini(base_units, "\"0\",\"\",\"void k<int,"));
  EXPECT_TRUE(contains(msg, "unterminated quoted field")) << msg;
  EXPECT_TRUE(contains(msg, "line 5, column 8")) << msg;
  EXPECT_TRUE(contains(parse_error(mini(base_units, "\"0\"x,\"\"\n")), "after a closing quote"));
}

TEST(ncu_csv_hand_made, non_numeric_value_in_a_metric_is_an_error) {
  const std::string row_prefix = "\"0\",\"\",\"k\",\"7\",\"(1, 1, 1)\",\"(32, 1, 1)\",";
  std::string msg = parse_error(mini(base_units, row_prefix + "\"fast\",\"0\",\"0\",\"50\"\n"));
  EXPECT_TRUE(contains(msg, "line 5 (kernel ID 0)")) << msg;
  EXPECT_TRUE(contains(msg, "\"gpu__time_duration.sum\": \"fast\" is not a number")) << msg;
  // A misplaced thousands separator is not a number either.
  msg = parse_error(mini(base_units, row_prefix + "\"1,23\",\"0\",\"0\",\"50\"\n"));
  EXPECT_TRUE(contains(msg, "\"1,23\" is not a number")) << msg;
  // The same row with a number parses.
  EXPECT_EQ(parse_ncu_raw_csv(mini(base_units, row_prefix + "\"1\",\"0\",\"0\",\"50\"\n"))
                .kernels.at(0)
                .metrics.duration_ns,
            1.0);
}

TEST(ncu_csv_hand_made, unknown_unit_on_a_read_metric_is_an_error) {
  const std::string msg = parse_error(
      mini("\"\",\"\",\"\",\"\",\"\",\"\",\"fortnight\",\"byte\",\"byte/block\",\"%\"\n", ""));
  EXPECT_TRUE(contains(msg, "\"gpu__time_duration.sum\" has unit \"fortnight\"")) << msg;
  EXPECT_TRUE(contains(msg, "--print-units base")) << msg;
}

TEST(ncu_csv_hand_made, an_unreadable_nvtx_range_keeps_the_ranges_before_it) {
  // The candidate's own range named with a quote, inside kjudge's: the parser threw, and every
  // kernel of both sides was lost ("ncu's report could not be read").
  const std::string text =
      mini(base_units,
           "\"0\",\"77  \"\"<default domain>:kjudge_candidate:none:none:none:none:none:none\"\" "
           "\"\"<default domain>:my\"\"range:none:none:none:none:none:none\"\" \",\"k\","
           "\"3\",\"(4, 2, 1)\",\"(32, 1, 1)\",\"1500\",\"2048\",\"1\",\"50\"\n");
  const auto r = parse_ncu_raw_csv(text);
  ASSERT_EQ(r.kernels.size(), 1U);
  EXPECT_EQ(r.kernels[0].nvtx_ranges.front(), "kjudge_candidate");
  EXPECT_EQ(kernels_in_range(r, ncu_candidate_range).size(), 1U);
  ASSERT_EQ(r.nvtx_unreadable.size(), 1U);
  EXPECT_NE(r.nvtx_unreadable[0].find("kernel ID 0"), std::string::npos) << r.nvtx_unreadable[0];

  // The unreadable range outside kjudge's (pushed during a warm-up and never popped): kjudge's
  // own is still found in the rest.
  const auto outer = parse_ncu_raw_csv(
      mini(base_units,
           "\"0\",\"77  \"\"<default domain>:my\"\"range:none:none:none:none:none:none\"\" "
           "\"\"<default domain>:kjudge_candidate:none:none:none:none:none:none\"\" \",\"k\","
           "\"3\",\"(4, 2, 1)\",\"(32, 1, 1)\",\"1500\",\"2048\",\"1\",\"50\"\n"));
  EXPECT_EQ(kernels_in_range(outer, ncu_candidate_range).size(), 1U);
  EXPECT_TRUE(kernels_in_range(outer, ncu_reference_range).empty());
  EXPECT_EQ(outer.nvtx_unreadable.size(), 1U);
}

TEST(ncu_csv_hand_made, a_stall_printed_as_n_a_is_unreported_and_its_shares_withheld) {
  // A stall reason ncu printed as n/a was left out of the map, and the others' shares were
  // renormalised to 100% (barrier = 100% here), unflagged.
  const std::string text =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\","
      "\"smsp__warps_issue_stalled_long_scoreboard.sum\","
      "\"smsp__warps_issue_stalled_barrier.sum\",\"sm__inst_executed_pipe_fma.sum\"\n"
      "\"\",\"\",\"ns\",\"\",\"\",\"\"\n"
      "\"0\",\"k\",\"1000\",\"n/a\",\"500\",\"n/a\"\n";
  const auto r = parse_ncu_raw_csv(text);
  ASSERT_EQ(r.kernels.size(), 1U);
  const auto& m = r.kernels[0].metrics;
  const auto unreported = [&m](const std::string& name) {
    return std::find(m.unreported_metrics.begin(), m.unreported_metrics.end(), name) !=
           m.unreported_metrics.end();
  };
  EXPECT_TRUE(unreported("smsp__warps_issue_stalled_long_scoreboard.sum"));
  EXPECT_TRUE(unreported("sm__inst_executed_pipe_fma.sum"));
  EXPECT_FALSE(unreported("smsp__warps_issue_stalled_barrier.sum"));
  EXPECT_EQ(m.stall_cycles.count("long_scoreboard"), 0U);
  ceilings c;
  auto d = derive(m, c);
  withhold_unreported(d, m.unreported_metrics, c, /*total=*/false);  // as the report does
  EXPECT_FALSE(d.stall_share_pct.ok());
  EXPECT_NE(d.stall_share_pct.failure().message.find("long_scoreboard"), std::string::npos)
      << d.stall_share_pct.failure().message;
}

TEST(ncu_csv_hand_made, numbers_as_ncu_prints_them) {
  EXPECT_EQ(parse_ncu_number("137,438,953,472"), 137438953472.0);
  EXPECT_EQ(parse_ncu_number("298.67"), 298.67);
  EXPECT_EQ(parse_ncu_number(" 1,536 "), 1536.0);
  EXPECT_EQ(parse_ncu_number("-2"), -2.0);
  EXPECT_FALSE(parse_ncu_number("").has_value());
  EXPECT_FALSE(parse_ncu_number("n/a").has_value());
  for (const char* bad : {"PolicySpread", "(128, 1, 1)", "1,2345", ",123", "1.2.3", "nan", "1e"})
    EXPECT_THROW((void)parse_ncu_number(bad), kj::error) << bad;
}

}  // namespace
}  // namespace kj::profile
