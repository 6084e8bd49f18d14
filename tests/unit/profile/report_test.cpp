// The profile report from synthetic but realistic inputs: the QuantVLA native candidate as
// recorded on an H200 (one fused kernel, 7.4 us) against the eager PyTorch reference (14 kernels).

#include <gtest/gtest.h>

#include <numeric>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/ncu_csv.hpp>
#include <kjudge/profile/report.hpp>

#include "test_util.hpp"

namespace kj::profile {
namespace {

using test::find_code;
using test::has_code;

constexpr double tb = 1e12;

ceilings h200() {
  ceilings c;
  c.l1 = {30 * tb, 0, 32 << 10};
  c.l2 = {10 * tb, 0, 16 << 20};
  c.dram = {3.9 * tb, 4.8 * tb, 1ull << 30};
  c.at(flop_type::fp32) = {51.9 * tb, 67 * tb};
  c.at(flop_type::tensor_bf16) = {790 * tb, 989.4 * tb};
  return c;
}

counter_source ncu_source() {
  return {true, "ncu 2025.3.1.0", "none", "all", "", 12.5, {}, {}};
}

constexpr const char* fused_demangled =
    "fused_kernel_opt(float const*, float const*, float const*, float const*, float*, float, int, "
    "int, int)";

/** The native candidate's one kernel, numbers as ncu recorded them on the H200. */
kernel_metrics fused_kernel() {
  kernel_metrics k;
  k.name = "_Z16fused_kernel_optPKfS0_S0_S0_Pffiii";
  k.demangled_name = fused_demangled;
  k.duration_ns = 7424;
  k.grid = {128, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 40;
  k.shared_mem_per_block_bytes = 512;
  k.occupancy_limit_registers = 4;  // 4 blocks x 8 warps = 50% of 64
  k.occupancy_limit_shared_mem = 32;
  k.occupancy_limit_warps = 8;
  k.occupancy_limit_blocks = 32;
  k.waves_per_sm = 0.24;  // 128 blocks / (132 SMs x 4)
  k.sm_count = 132;
  k.max_warps_per_sm = 64;
  k.dram_read_bytes = 328'960;
  k.dram_write_bytes = 262'144;
  k.l1_sectors = 300'000;
  k.l1_hit_sectors = 120'000;
  k.l2_sectors = 216'369;
  k.l2_hit_sectors = 192'177;
  k.global_load_requests = 20'000;
  k.global_load_sectors = 80'000;  // 4.0 per request: coalesced 4-byte loads
  k.global_store_requests = 2'048;
  k.global_store_sectors = 8'192;
  k.sm_active_cycles = 1'412'014;
  k.elapsed_cycles = 14'352;
  k.warps_active = 12'873'698;
  k.theoretical_occupancy_pct = 50.0;
  k.sm_throughput_pct = 17.13;
  k.memory_throughput_pct = 12.93;
  k.flops.fp32 = {65'536, 131'072, 8'388'608};
  k.instructions_issued = 1'294'976;
  k.stall_cycles = {{"long_scoreboard", 6'000'000},
                    {"barrier", 3'000'000},
                    {"short_scoreboard", 1'200'000},
                    {"wait", 800'000},
                    {"mio_throttle", 400'000}};
  return k;
}

const std::vector<double> ref_ncu_ns{2100, 2400, 2000, 2300, 6400, 2200, 2100,
                                     2000, 2600, 2400, 2200, 2100, 2000, 2200};

/** The eager reference: 14 small elementwise / reduction kernels. */
std::vector<kernel_metrics> reference_kernels() {
  std::vector<kernel_metrics> out;
  for (std::size_t i = 0; i < ref_ncu_ns.size(); ++i) {
    kernel_metrics k;
    k.name = "_ZN2at6native29vectorized_elementwise_kernelILi4E" + std::to_string(i);
    k.demangled_name = "void at::native::vectorized_elementwise_kernel<4, at::native::Functor" +
                       std::to_string(i) + "<float>, at::detail::Array<char*, 2> >(int, float)";
    k.duration_ns = ref_ncu_ns[i];
    k.grid = {256, 1, 1};
    k.block = {128, 1, 1};
    k.registers_per_thread = 24;
    k.sm_count = 132;
    k.max_warps_per_sm = 64;
    k.dram_read_bytes = 262'144;
    k.dram_write_bytes = 262'144;
    k.l2_sectors = 20'000;
    k.l2_hit_sectors = 4'000;
    k.global_load_requests = 2'048;
    k.global_load_sectors = 8'192;
    k.sm_active_cycles = 200'000;
    k.elapsed_cycles = 3'000;
    k.warps_active = 3'000'000;
    k.theoretical_occupancy_pct = 100.0;
    k.sm_throughput_pct = 4.0;
    k.memory_throughput_pct = 9.0;
    k.flops.fp32 = {65'536, 0, 0};
    k.instructions_issued = 40'000;
    k.stall_cycles = {{"long_scoreboard", 300'000}, {"wait", 50'000}, {"barrier", 10'000}};
    out.push_back(std::move(k));
  }
  return out;
}

launch_summary launches(std::uint64_t n, double span_ns) {
  launch_summary l;
  l.kernel_launches = n;
  l.kernel_span = nanoseconds(span_ns);
  l.kernel_time_sum = nanoseconds(span_ns);
  l.kernel_busy_time = nanoseconds(span_ns);
  return l;
}

side_inputs reference_inputs() {
  side_inputs in;
  in.ncu_kernels = reference_kernels();
  cupti_forward f;
  for (std::size_t i = 0; i < ref_ncu_ns.size(); ++i) {
    double ns = ref_ncu_ns[i] * 1.03;
    if (i == 0) ns = 2900;  // 38% apart but under 5 us: not judged
    if (i == 4) ns = 8000;  // 25% apart at 6.4 us: flagged
    f.kernels.push_back({in.ncu_kernels[i].demangled_name, ns, {256, 1, 1}, {128, 1, 1}, 7});
  }
  f.launches = checked<launch_summary>::pass(launches(14, 60'000));
  f.memory = checked<peak_memory>::pass({1'572'864, 1'572'864, 0});
  f.event_time_ns = 70'000;
  in.cupti = f;
  in.device_time_ns = 124'600;  // eager reference: host launch latency dominates
  return in;
}

side_inputs candidate_inputs(double device_time_ns = 8'700) {
  side_inputs in;
  in.ncu_kernels = {fused_kernel()};
  cupti_forward f;
  f.kernels.push_back({fused_demangled, 7300, {128, 1, 1}, {256, 1, 1}, 7});
  f.launches = checked<launch_summary>::pass(launches(1, 7300));
  f.memory = checked<peak_memory>::pass({262'144, 262'144, 0});
  f.event_time_ns = 8'900;
  in.cupti = f;
  in.device_time_ns = device_time_ns;
  return in;
}

profile_report make_report(const side_inputs& ref, const side_inputs& cand) {
  return build_report("problems/quantvla.py", "candidates/quantvla_native.cu", "NVIDIA H200",
                      h200(), "test roofs", ncu_source(), ref, cand);
}

TEST(ProfileReport, TotalsBoundAndRooflineOfTheCandidate) {
  const auto r = make_report(reference_inputs(), candidate_inputs());
  const auto& c = r.candidate_side;
  ASSERT_TRUE(c.total.has_value());
  EXPECT_DOUBLE_EQ(c.total->counters.duration_ns, 7424);
  EXPECT_DOUBLE_EQ(c.total->counters.dram_bytes(), 591'104);
  EXPECT_NEAR(c.total->derived.l2_hit_rate_pct.value(), 100.0 * 192'177 / 216'369, 1e-9);
  EXPECT_NEAR(c.total->derived.achieved_occupancy_pct.value(),
              100.0 * 12'873'698 / (1'412'014.0 * 64), 1e-9);
  EXPECT_NEAR(c.total->derived.sm_busy_pct.value(), 100.0 * 1'412'014 / (14'352.0 * 132), 1e-9);
  // SM 17.1% and memory 12.9% of peak: neither near 60%.
  EXPECT_EQ(c.bound.bound, bottleneck::latency_bound) << c.bound.reason;

  const double flop_sum = 65'536 + 131'072 + 2.0 * 8'388'608;
  EXPECT_NEAR(c.intensity_flop_per_byte.value(), flop_sum / 591'104, 1e-12);
  EXPECT_NEAR(c.achieved_flop_per_s.value(), flop_sum / 7.424e-6, 1.0);
  // fp32 dominates: min(67 TFLOP/s, 28.7 FLOP/byte x 4.8 TB/s) = the fp32 roof.
  EXPECT_DOUBLE_EQ(c.attainable_flop_per_s.value(), 67 * tb);

  // The reference's 14 kernels ran 33 us of a 124.6 us forward: launch gaps dominate.
  const auto& ref = r.reference;
  ASSERT_TRUE(ref.total.has_value());
  EXPECT_DOUBLE_EQ(ref.total->counters.duration_ns,
                   std::accumulate(ref_ncu_ns.begin(), ref_ncu_ns.end(), 0.0));
  EXPECT_EQ(ref.bound.bound, bottleneck::launch_bound) << ref.bound.reason;
  EXPECT_NEAR(ref.total->derived.l2_hit_rate_pct.value(), 20.0, 1e-9) << "from summed sectors";
}

TEST(ProfileReport, RooflineIsMemoryLimitedAtLowIntensity) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].flops.fp32 = {591'104, 0, 0};  // 1 FLOP per DRAM byte
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_DOUBLE_EQ(r.candidate_side.intensity_flop_per_byte.value(), 1.0);
  EXPECT_DOUBLE_EQ(r.candidate_side.attainable_flop_per_s.value(), 4.8 * tb);
}

TEST(ProfileReport, NoFlopMeansNoRooflinePointNotZero) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].flops = {};
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_TRUE(r.candidate_side.intensity_flop_per_byte.is_missing());
  EXPECT_TRUE(r.candidate_side.achieved_flop_per_s.is_missing());
  EXPECT_TRUE(r.candidate_side.attainable_flop_per_s.is_missing());
}

TEST(ProfileReport, FusionRatioFromCuptiLaunches) {
  const auto r = make_report(reference_inputs(), candidate_inputs());
  EXPECT_DOUBLE_EQ(r.fusion_ratio.value(), 14.0);
  // Without CUPTI on one side the ncu kernel counts are used.
  auto cand = candidate_inputs();
  cand.cupti.reset();
  auto ref = reference_inputs();
  ref.ncu_kernels.resize(7);
  ref.cupti->kernels.resize(7);
  const auto mixed = make_report(ref, cand);
  EXPECT_DOUBLE_EQ(mixed.fusion_ratio.value(), 7.0);
  // The summary quotes the counts it divided, from one source: 7 / 1 ncu kernels, not a CUPTI
  // count over an ncu count.
  const auto text = agent_summary(mixed);
  EXPECT_NE(text.find("fusion ratio (reference / candidate launches, ncu kernels): 7.00 (7 / 1)"),
            std::string::npos)
      << text;
  // Each side line names where its own count comes from (the reference still has its CUPTI
  // records: 14 launches).
  EXPECT_NE(text.find("14 kernels (CUPTI)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 kernel (ncu kernels)"), std::string::npos) << text;
}

TEST(ProfileReport, DurationsMatchedByLaunchOrderAndOneDisagreementFlagged) {
  const auto r = make_report(reference_inputs(), candidate_inputs());
  const auto& ref = r.reference;
  ASSERT_EQ(ref.durations.size(), 14u);
  EXPECT_DOUBLE_EQ(ref.durations[4].ncu_ns, 6400);
  EXPECT_DOUBLE_EQ(ref.durations[4].cupti_ns, 8000);
  EXPECT_NEAR(ref.durations[4].difference_pct, 25.0, 1e-9);
  EXPECT_NEAR(ref.durations[0].difference_pct, 100.0 * 800 / 2100, 1e-9);
  int disagreements = 0;
  for (const auto& f : ref.flags)
    if (f.code == "duration_disagrees") {
      ++disagreements;
      EXPECT_EQ(f.severity, "warning");
      EXPECT_NE(f.message.find("#5"), std::string::npos) << f.message;
    }
  EXPECT_EQ(disagreements, 1) << "kernel #1 differs by 38% but is under 5 us";
  EXPECT_FALSE(has_code(ref.flags, "duration_unmatched"));

  const auto& cand = r.candidate_side;
  ASSERT_EQ(cand.durations.size(), 1u);
  EXPECT_NEAR(cand.durations[0].difference_pct, 100.0 * 124 / 7424, 1e-9);
  EXPECT_FALSE(has_code(cand.flags, "duration_disagrees"));
}

TEST(ProfileReport, DurationsMatchedByNameWhenCountsDifferAndRestFlaggedUnmatched) {
  auto ref = reference_inputs();
  // CUPTI saw an extra fill kernel before the others: order shifts, names still pair them.
  ref.cupti->kernels.insert(ref.cupti->kernels.begin(),
                            {"void at::native::fill_kernel<float>(float*)", 1500, {}, {}, 7});
  auto cand = candidate_inputs();
  cand.cupti->kernels[0].name = "some_other_kernel(float*)";
  const auto r = make_report(ref, cand);
  EXPECT_EQ(r.reference.durations.size(), 14u);
  EXPECT_DOUBLE_EQ(r.reference.durations[4].cupti_ns, 8000);
  EXPECT_TRUE(has_code(r.reference.flags, "duration_unmatched")) << "the fill kernel";
  EXPECT_TRUE(r.candidate_side.durations.empty());
  const auto* f = find_code(r.candidate_side.flags, "duration_unmatched");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
}

TEST(ProfileReport, DurationsPairCuptiAndNcuNamesOfTheSameLaunch) {
  // Names as the two tools printed them for the same launches on the H200 (2026-11-30): CUPTI's
  // demangler keeps at::native:: and "(anonymous namespace)", ncu drops the first and prints
  // "<unnamed>"; launches pair by kernel identifier and launch shape.
  kernel_metrics abs_ncu = fused_kernel();
  abs_ncu.name = abs_ncu.demangled_name =
      "void at::vectorized_elementwise_kernel<4, at::AbsFunctor<float>, std::array<char *, "
      "2>>(int, T2, T3)";
  abs_ncu.grid = {64, 1, 1};
  abs_ncu.block = {128, 1, 1};
  kernel_metrics fused_ncu = fused_kernel();
  fused_ncu.name = fused_ncu.demangled_name =
      "void <unnamed>::quantvla_kernel<<unnamed>::tile_cfg<16, 32, 128, 4, 4, 8>, "
      "1>(<unnamed>::qv_args)";
  auto in = candidate_inputs();
  in.ncu_kernels = {abs_ncu, fused_ncu};
  in.cupti->kernels = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
       "std::array<char*, 2ul> >(int, at::native::AbsFunctor<float>, std::array<char*, 2ul>)",
       2300,
       {64, 1, 1},
       {128, 1, 1},
       7},
      {"void (anonymous namespace)::quantvla_kernel<(anonymous namespace)::tile_cfg<16, 32, 128, "
       "4, 4, 8>, true>((anonymous namespace)::qv_args)",
       7300,
       {128, 1, 1},
       {256, 1, 1},
       7}};
  const auto paired = make_report(reference_inputs(), in);
  EXPECT_EQ(paired.candidate_side.durations.size(), 2u);
  EXPECT_FALSE(has_code(paired.candidate_side.flags, "duration_unmatched"));
  // Same names, another grid: not the same launch.
  in.cupti->kernels[1].grid = {64, 1, 1};
  const auto unpaired = make_report(reference_inputs(), in);
  EXPECT_EQ(unpaired.candidate_side.durations.size(), 1u);
  EXPECT_TRUE(has_code(unpaired.candidate_side.flags, "duration_unmatched"));
}

TEST(ProfileReport, BrokenCountersBecomeFlagsAndTheTextShowsTheFlagNotANumber) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].l2_hit_sectors = 779'000;  // 360.0% of the sectors: impossible
  cand.ncu_kernels[0].duration_ns = 100;         // under 0.5 us: impossible
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_TRUE(has_code(r.candidate_side.flags, "percentage_out_of_range"));
  EXPECT_TRUE(has_code(r.candidate_side.flags, "impossible_kernel_time"));
  EXPECT_TRUE(has_error(r.candidate_side.flags));
  EXPECT_FALSE(has_error(r.reference.flags));

  const std::string text = render_report(r);
  EXPECT_NE(text.find("FAILED percentage_out_of_range"), std::string::npos) << text;
  EXPECT_NE(text.find("FAILED impossible_kernel_time"), std::string::npos) << text;
  // The totals row shows the flag; 360.0% appears only inside the flag's own message.
  const auto row_start = text.find("L1 hit rate / L2 hit rate");
  ASSERT_NE(row_start, std::string::npos);
  const std::string row = text.substr(row_start, text.find('\n', row_start) - row_start);
  EXPECT_NE(row.find("FAILED percentage_out_of_range"), std::string::npos) << row;
  EXPECT_EQ(row.find("360"), std::string::npos) << row;
  EXPECT_EQ(text.find("100 ns"), std::string::npos) << text;
  // No class from broken times: without the check the 0.1 us kernel of an 8.7 us forward would
  // read as launch gaps (launch-bound). CUPTI's 7.3 us leave no gaps to judge, and the kernels'
  // class, from ncu's broken time, is none.
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::unknown) << r.candidate_side.bound.reason;
  EXPECT_NE(
      r.candidate_side.bound.reason.find("no class from a broken time: kernel fused_kernel_opt"),
      std::string::npos)
      << r.candidate_side.bound.reason;
  // Without CUPTI's times, ncu's broken one decides, and says so.
  auto ncu_only = cand;
  ncu_only.cupti.reset();
  const auto without = make_report(reference_inputs(), ncu_only);
  EXPECT_EQ(without.candidate_side.bound.bound, bottleneck::unknown);
  EXPECT_NE(without.candidate_side.bound.reason.find(
                "kernel fused_kernel_opt failed its duration check (impossible_kernel_time)"),
            std::string::npos)
      << without.candidate_side.bound.reason;
  // No rate of a broken time is shown: the kernel's and the total's bandwidths fail with it.
  const auto& k = r.candidate_side.kernels[0].derived;
  EXPECT_FALSE(k.dram_bytes_per_s.ok());
  EXPECT_FALSE(r.candidate_side.total->derived.dram_bytes_per_s.ok());
  const auto bw = text.find("DRAM bandwidth");
  ASSERT_NE(bw, std::string::npos);
  const std::string bw_row = text.substr(bw, text.find('\n', bw) - bw);
  EXPECT_NE(bw_row.rfind("FAILED impossible_kernel_time"), std::string::npos) << bw_row;
  const std::string summary = agent_summary(r);
  EXPECT_EQ(summary.find("100 ns"), std::string::npos) << summary;
  EXPECT_NE(summary.find("FAILED impossible_kernel_time"), std::string::npos) << summary;
  int l2_flags = 0;
  for (const auto& f : r.candidate_side.flags)
    l2_flags += f.message.find("L2 hit rate") != std::string::npos ? 1 : 0;
  EXPECT_EQ(l2_flags, 1) << "the one-kernel total does not repeat its kernel's flag";
  EXPECT_NE(text.find("error ("), std::string::npos) << "flags grouped by severity";
  EXPECT_NE(text.find("[candidate] impossible_kernel_time"), std::string::npos);
}

TEST(ProfileReport, GraphReplayDeviceTimeLeavesLaunchBoundToTheEagerSpan) {
  // A graph replay leaves out most gaps between eager launches: a 3 us kernel read against a
  // 5 us replay would look busy (60%), against the eager forward's 7.3 us CUPTI span it is not.
  auto cand = candidate_inputs(5'000);
  cand.ncu_kernels.clear();
  cand.cupti->kernels[0].duration_ns = 3'000;
  EXPECT_NE(make_report(reference_inputs(), cand).candidate_side.bound.bound,
            bottleneck::launch_bound);
  cand.device_time_from_graph = true;
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::launch_bound)
      << r.candidate_side.bound.reason;
  EXPECT_NE(r.candidate_side.bound.reason.find("of the forward's 7.30 us"), std::string::npos)
      << r.candidate_side.bound.reason;
  // The figure shown stays the evaluation's, labelled as a replay, and survives the JSON.
  EXPECT_NE(render_report(r).find("5.00 us (device median, graph replay)"), std::string::npos)
      << render_report(r);
  const auto back = report_from_json(nlohmann::json::parse(to_json(r).dump()));
  EXPECT_TRUE(back.candidate_side.device_time_from_graph);
  EXPECT_FALSE(back.reference.device_time_from_graph);
  EXPECT_EQ(back.candidate_side.bound.bound, bottleneck::launch_bound);
  // Without a CUPTI span the graph figure is all there is.
  cand.cupti->launches = checked<launch_summary>::missing("no records");
  EXPECT_NE(make_report(reference_inputs(), cand).candidate_side.bound.bound,
            bottleneck::launch_bound);
}

TEST(ProfileReport, BrokenCuptiKernelTimeWithoutCountersGivesNoClass) {
  // Without counters the kernel times are CUPTI's, which the report checks itself.
  auto cand = candidate_inputs();
  cand.ncu_kernels.clear();
  cand.cupti->kernels[0].duration_ns = 3'000;  // 3 us of an 8.7 us forward: gaps dominate
  EXPECT_EQ(make_report(reference_inputs(), cand).candidate_side.bound.bound,
            bottleneck::launch_bound);
  cand.cupti->kernels[0].duration_ns = 300;  // under 0.5 us: impossible
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::unknown) << r.candidate_side.bound.reason;
  EXPECT_NE(r.candidate_side.bound.reason.find(
                "kernel fused_kernel_opt failed its duration check (impossible_kernel_time)"),
            std::string::npos)
      << r.candidate_side.bound.reason;
}

TEST(ProfileReport, LaunchGapsAreJudgedOnCuptisClockNotNcus) {
  // Ten kernels of 1 us each in a 23.5 us span (43% busy: launch-bound). ncu times each at
  // 2.3 us under its replay; summed against the span, they made the forward 98% busy.
  auto cand = candidate_inputs(23'500);
  cand.ncu_kernels.assign(10, fused_kernel());
  for (auto& k : cand.ncu_kernels) k.duration_ns = 2'300;
  cand.cupti->kernels.assign(10, {fused_demangled, 1'000, {128, 1, 1}, {256, 1, 1}, 7});
  cand.cupti->launches = checked<launch_summary>::pass(launches(10, 23'500));
  const auto r = make_report(reference_inputs(), cand);
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::launch_bound)
      << r.candidate_side.bound.reason;
  // CUPTI without a time for some kernel (no device memory for its records): its sum would lack
  // it, so ncu's times decide (busy, here), as without CUPTI.
  cand.cupti->kernels[3].duration_ns = 0;
  const auto partial = make_report(reference_inputs(), cand);
  EXPECT_NE(partial.candidate_side.bound.bound, bottleneck::launch_bound)
      << partial.candidate_side.bound.reason;
}

TEST(ProfileReport, KernelWithoutDurationGivesNoClassAndSaysWhy) {
  auto cand = candidate_inputs();
  cand.cupti.reset();                   // no CUPTI times: ncu's decide
  cand.ncu_kernels[0].duration_ns = 0;  // ncu printed "n/a": not collected, not broken
  auto r = make_report(reference_inputs(), cand);
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::unknown) << "not launch gaps either";
  EXPECT_NE(r.candidate_side.bound.reason.find(
                "kernel fused_kernel_opt has no duration (no kernel duration)"),
            std::string::npos)
      << r.candidate_side.bound.reason;

  // The column is missing from ncu's table: every reason names it.
  auto source = ncu_source();
  source.missing_metrics = {"gpu__time_duration.sum"};
  auto ref = reference_inputs();
  ref.cupti.reset();
  for (auto& k : ref.ncu_kernels) k.duration_ns = 0;
  r = build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source, ref, cand);
  for (const auto* s : {&r.reference, &r.candidate_side}) {
    SCOPED_TRACE(s->side);
    EXPECT_EQ(s->bound.bound, bottleneck::unknown);
    EXPECT_NE(s->bound.reason.find("has no duration (kernel duration: ncu did not report "
                                   "gpu__time_duration.sum)"),
              std::string::npos)
        << s->bound.reason;
    ASSERT_TRUE(s->total.has_value());
    const auto& bw = s->total->derived.dram_bytes_per_s;
    ASSERT_TRUE(bw.is_missing());
    EXPECT_EQ(bw.failure().message, "DRAM bandwidth: ncu did not report gpu__time_duration.sum");
    // The total's ncu percentages are weighted by duration: without it they are unknown too.
    EXPECT_NE(s->total->derived.theoretical_occupancy_pct.failure().message.find(
                  "gpu__time_duration.sum"),
              std::string::npos);
    EXPECT_FALSE(has_error(s->flags));
  }
}

TEST(ProfileReport, MissingMetricIsListedFlaggedAndItsFiguresWithheld) {
  auto source = ncu_source();
  source.missing_metrics = {"dram__bytes_read.sum"};
  auto ref = reference_inputs();
  auto cand = candidate_inputs();
  for (auto* in : {&ref, &cand})
    for (auto& k : in->ncu_kernels) k.dram_read_bytes = 0;  // as the parser leaves it
  const auto r = build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source, ref, cand);

  const auto* f = find_code(r.flags, "ncu_metrics_missing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, severity_warning);
  EXPECT_NE(f->message.find("no column for 1 metric kjudge reads (dram__bytes_read.sum)"),
            std::string::npos)
      << f->message;

  // Every figure that needs the DRAM read bytes is n/a and says why; the others keep their numbers.
  const auto& c = r.candidate_side;
  ASSERT_TRUE(c.total.has_value());
  for (const auto* d : {&c.kernels[0].derived, &c.total->derived}) {
    for (const auto* m : {&d->dram_bytes_per_s, &d->dram_throughput_pct,
                          &d->arithmetic_intensity_flop_per_byte, &d->memory_throughput_pct}) {
      ASSERT_TRUE(m->is_missing());
      EXPECT_NE(m->failure().message.find("ncu did not report dram__bytes_read.sum"),
                std::string::npos)
          << m->failure().message;
    }
    EXPECT_TRUE(d->l2_hit_rate_pct.ok());
    EXPECT_TRUE(d->l2_bytes_per_s.ok());
    EXPECT_TRUE(d->compute_throughput_pct.ok());
    // Compute at 17% of its roof and memory unknown: no class, and the reason says why.
    EXPECT_EQ(d->bound.bound, bottleneck::unknown);
    EXPECT_NE(d->bound.reason.find("dram__bytes_read.sum"), std::string::npos) << d->bound.reason;
  }
  EXPECT_EQ(c.bound.bound, bottleneck::unknown) << c.bound.reason;
  EXPECT_TRUE(c.intensity_flop_per_byte.is_missing());
  EXPECT_TRUE(c.attainable_flop_per_s.is_missing());
  EXPECT_TRUE(c.achieved_flop_per_s.ok()) << "the FLOP counters and the duration were reported";
  EXPECT_FALSE(has_error(c.flags));
  // Launch gaps still show without the DRAM counter.
  EXPECT_EQ(r.reference.bound.bound, bottleneck::launch_bound);

  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("counters").at("missing_metrics"), nlohmann::json({"dram__bytes_read.sum"}));
  const auto& bw = j.at("sides").at("candidate").at("total").at("derived").at("dram_bytes_per_s");
  EXPECT_TRUE(bw.at("value").is_null());
  EXPECT_EQ(bw.at("flags")[0].at("code"), no_data_code);
  const auto back = report_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.counters.missing_metrics, source.missing_metrics);
  EXPECT_TRUE(back.candidate_side.total->derived.dram_bytes_per_s.is_missing());
  EXPECT_EQ(to_json(back), j);
  auto older = j;  // written before the field existed
  older.at("counters").erase("missing_metrics");
  EXPECT_TRUE(report_from_json(older).counters.missing_metrics.empty());

  const std::string text = render_report(r);
  EXPECT_NE(text.find("counters ncu did not report (1): dram__bytes_read.sum;"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[report] ncu_metrics_missing"), std::string::npos) << text;
  // No DRAM figure of the totals is a number: the bandwidth, nor the byte sum that lacks the reads.
  for (const char* label : {"DRAM bandwidth", "DRAM bytes (read + write)"}) {
    const auto row_start = text.find(label);
    ASSERT_NE(row_start, std::string::npos) << label;
    const auto cells_start = row_start + std::string_view(label).size();
    const std::string cells = text.substr(cells_start, text.find('\n', cells_start) - cells_start);
    EXPECT_EQ(cells.find('B'), std::string::npos) << label << cells;  // B, kB, GB/s, ...
    EXPECT_NE(cells.find("n/a"), std::string::npos) << label << cells;
  }
  EXPECT_NE(agent_summary(r).find("ncu_metrics_missing"), std::string::npos);
  const auto with_baseline = agent_summary(r, &r);
  EXPECT_NE(with_baseline.find("candidate kernels"), std::string::npos) << with_baseline;
  EXPECT_EQ(with_baseline.find("DRAM bytes"), std::string::npos) << with_baseline;
}

TEST(ProfileReport, MissingCounterOfATypeWithoutARoofLeavesTheLargestThroughput) {
  // A GPU without an FP8 tensor counter has no FP8 roof either (h200() has none): the largest
  // compute throughput never included FP8 and stays; sums over every type do not.
  auto source = ncu_source();
  source.missing_metrics = {"sm__ops_path_tensor_src_fp8.sum"};
  const auto r = build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source,
                              reference_inputs(), candidate_inputs());
  const auto& d = r.candidate_side.total->derived;
  EXPECT_TRUE(d.compute_throughput_pct.ok());
  EXPECT_TRUE(d.memory_throughput_pct.ok());
  EXPECT_EQ(d.bound.bound, bottleneck::latency_bound) << d.bound.reason;
  EXPECT_TRUE(d.flops(flop_type::tensor_fp8).is_missing());
  EXPECT_TRUE(d.flops(flop_type::fp32).ok());
  EXPECT_TRUE(d.arithmetic_intensity_flop_per_byte.is_missing());
  EXPECT_TRUE(r.candidate_side.achieved_flop_per_s.is_missing());
  // With an FP8 roof the FP8 throughput could be the largest: unknown, and so is the class.
  auto roofs = h200();
  roofs.at(flop_type::tensor_fp8) = {0, 1979 * tb};
  const auto with_roof = build_report("p", "c", "NVIDIA H200", roofs, "test roofs", source,
                                      reference_inputs(), candidate_inputs());
  const auto& e = with_roof.candidate_side.total->derived;
  ASSERT_TRUE(e.compute_throughput_pct.is_missing());
  EXPECT_EQ(e.compute_throughput_pct.failure().message,
            "compute throughput: ncu did not report sm__ops_path_tensor_src_fp8.sum");
  EXPECT_EQ(e.bound.bound, bottleneck::unknown);
}

TEST(ProfileReport, MissingMetricsFlagNamesEightAndCountsTheRest) {
  auto source = ncu_source();
  for (char c = 'a'; c < 'a' + 11; ++c)
    source.missing_metrics.push_back(std::string("test__metric_") + c + ".sum");
  const auto r = build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source,
                              reference_inputs(), candidate_inputs());
  const auto* f = find_code(r.flags, "ncu_metrics_missing");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("no column for 11 metrics"), std::string::npos) << f->message;
  for (std::size_t i = 0; i < source.missing_metrics.size(); ++i)
    EXPECT_EQ(f->message.find(source.missing_metrics[i]) != std::string::npos,
              i < missing_metrics_named)
        << source.missing_metrics[i];
  EXPECT_NE(f->message.find("and 3 more in counters.missing_metrics"), std::string::npos);
  // The text report lists them all.
  const std::string text = render_report(r);
  EXPECT_NE(text.find("counters ncu did not report (11): test__metric_a.sum, "), std::string::npos);
  EXPECT_NE(text.find("test__metric_k.sum;"), std::string::npos) << text;
  // Nothing missing, no flag.
  EXPECT_EQ(
      find_code(make_report(reference_inputs(), candidate_inputs()).flags, "ncu_metrics_missing"),
      nullptr);
}

TEST(ProfileReport, HandMadeNcuTableWithoutMostMetricsShowsOnlyWhatItHas) {
  // Two kernels; of the metrics kjudge reads, ncu gave only the duration and the DRAM bytes.
  const std::string csv =
      "==PROF== Connected to process 7\n"
      "\"ID\",\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\","
      "\"Kernel Name\",\"Block Size\",\"Grid Size\",\"gpu__time_duration.sum\","
      "\"dram__bytes_read.sum\",\"dram__bytes_write.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"ns\",\"byte\",\"byte\"\n"
      "\"0\",\"7  \"\"<default domain>:kjudge_reference:none:none:none:none:none:none\"\" \","
      "\"ref_kernel(float*)\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"5,000\",\"1,000,000\","
      "\"1,000,000\"\n"
      "\"1\",\"7  \"\"<default domain>:kjudge_candidate:none:none:none:none:none:none\"\" \","
      "\"cand_kernel(float*)\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"4,000\",\"1,000,000\","
      "\"500,000\"\n";
  const auto ncu = parse_ncu_raw_csv(csv);
  ASSERT_EQ(ncu.kernels.size(), 2u);
  const auto& missing = ncu.missing_metrics;
  ASSERT_GT(missing.size(), missing_metrics_named);
  auto source = ncu_source();
  source.missing_metrics = missing;
  side_inputs ref, cand;
  ref.ncu_kernels = kernels_in_range(ncu, ncu_reference_range);
  cand.ncu_kernels = kernels_in_range(ncu, ncu_candidate_range);
  const auto r = build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source, ref, cand);

  const auto& k = r.candidate_side.kernels.at(0).derived;
  EXPECT_DOUBLE_EQ(k.duration_ns.value(), 4'000);
  EXPECT_DOUBLE_EQ(k.dram_bytes_per_s.value(), 1.5e6 / 4e-6);
  // Read as 0, these would be 0 FLOP/s, 0 sectors per request (an invariant failure) and "no
  // data (denominator 0)": each is n/a and names what ncu did not report.
  const auto names = [](const checked<double>& m, const std::string& metric) {
    return m.is_missing() && m.failure().message.find(metric) != std::string::npos;
  };
  EXPECT_TRUE(names(k.flops(flop_type::fp32), "smsp__sass_thread_inst_executed_op_ffma_pred_on"));
  EXPECT_TRUE(
      names(k.global_load_sectors_per_request, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"));
  EXPECT_TRUE(names(k.l2_hit_rate_pct, "lts__t_sectors_lookup_hit.sum, lts__t_sectors.sum"));
  EXPECT_TRUE(names(k.theoretical_occupancy_pct, "sm__maximum_warps_per_active_cycle_pct"));
  EXPECT_TRUE(names(r.candidate_side.achieved_flop_per_s, "sm__ops_path_tensor_src_fp8.sum"));
  EXPECT_FALSE(has_error(r.candidate_side.flags));
  EXPECT_FALSE(has_error(r.reference.flags));
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::unknown);

  const auto* f = find_code(r.flags, "ncu_metrics_missing");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("no column for " + std::to_string(missing.size()) + " metrics"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find(missing.front()), std::string::npos);
  EXPECT_EQ(f->message.find(missing.back()), std::string::npos) << "only the first eight named";
  EXPECT_EQ(to_json(r).at("counters").at("missing_metrics").size(), missing.size());
}

TEST(ProfileReport, AchievedAboveTheRoofIsFlagged) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].flops.fp32 = {0, 0, 80e12 * 7.424e-6 / 2};  // 80 TFLOP/s on a 67 roof
  const auto r = make_report(reference_inputs(), cand);
  const auto& c = r.candidate_side;
  ASSERT_FALSE(c.achieved_flop_per_s.ok());
  EXPECT_EQ(c.achieved_flop_per_s.failure().code, "flops_above_roofline");
  EXPECT_TRUE(has_code(c.flags, "flops_above_roofline"));
  EXPECT_NE(render_report(r).find("FAILED flops_above_roofline"), std::string::npos);
}

TEST(ProfileReport, MixedPrecisionWorkIsHeldToEachTypesOwnRoof) {
  // FP32 at 45 of its 67 TFLOP/s and FP64 at 32 of its 34, side by side on their own units:
  // their 77 TFLOP/s together were held to the dominant type's 67, an error on a valid kernel.
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].flops.fp32 = {0, 0, 45e12 * 7.424e-6 / 2};
  cand.ncu_kernels[0].flops.fp64 = {0, 0, 32e12 * 7.424e-6 / 2};
  auto roofs = h200();
  roofs.at(flop_type::fp64) = {30e12, 34e12};
  const auto report = [&] {
    return build_report("p", "c", "NVIDIA H200", roofs, "test roofs", ncu_source(),
                        reference_inputs(), cand);
  };
  const auto r = report();
  EXPECT_FALSE(has_code(r.candidate_side.flags, "flops_above_roofline"))
      << r.candidate_side.achieved_flop_per_s.failure().message;
  // One type past its own roof still is flagged, and named.
  cand.ncu_kernels[0].flops.fp64 = {0, 0, 40e12 * 7.424e-6 / 2};
  const auto over = report();
  ASSERT_FALSE(over.candidate_side.achieved_flop_per_s.ok());
  EXPECT_NE(over.candidate_side.achieved_flop_per_s.failure().message.find("fp64"),
            std::string::npos)
      << over.candidate_side.achieved_flop_per_s.failure().message;
}

TEST(ProfileReport, KernelsOfDifferentDevicesDoNotThrow) {
  auto cand = candidate_inputs();
  auto other = fused_kernel();
  other.sm_count = 114;
  cand.ncu_kernels.push_back(other);
  profile_report r;
  ASSERT_NO_THROW(r = make_report(reference_inputs(), cand));
  EXPECT_FALSE(r.candidate_side.total.has_value());
  EXPECT_TRUE(has_code(r.candidate_side.flags, "kernels_not_combinable"));
  EXPECT_EQ(r.candidate_side.bound.bound, bottleneck::unknown);
  EXPECT_NO_THROW((void)render_report(r));
  EXPECT_NO_THROW((void)agent_summary(r));
}

TEST(ProfileReport, ReportLevelFlagsComeFromTheCeilingsAndMissingCounters) {
  auto roofs = h200();
  roofs.l1.measured_bytes_per_s = 13.6e9;  // the seed's L1 "ceiling": one launch timed
  counter_source none;
  none.unavailable_reason = "ncu not found on PATH";
  const auto r =
      build_report("p", "c", "gpu", roofs, "src", none, reference_inputs(), candidate_inputs());
  EXPECT_TRUE(has_code(r.flags, "ceilings_out_of_order"));
  const auto* f = find_code(r.flags, "counters_unavailable");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("ncu not found on PATH"), std::string::npos);
}

TEST(ProfileReport, JsonRoundTripKeepsNumbersClassesAndFlags) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].l2_hit_sectors = 779'000;  // a failed metric must survive as a flag
  auto r = make_report(reference_inputs(), cand);
  r.flags.push_back({"caller_note", "info", "added after build_report"});
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("schema"), "kjudge.profile/2");
  EXPECT_TRUE(j.at("sides")
                  .at("candidate")
                  .at("total")
                  .at("derived")
                  .at("l2_hit_rate_pct")
                  .at("value")
                  .is_null());
  EXPECT_TRUE(
      j.at("sides").at("candidate").at("kernels")[0].at("counters").contains("duration_ns"));

  const auto back = report_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.problem, r.problem);
  EXPECT_EQ(back.candidate, r.candidate);
  EXPECT_EQ(back.counters.tool, "ncu 2025.3.1.0");
  EXPECT_DOUBLE_EQ(back.roofs.dram.datasheet_bytes_per_s, 4.8 * tb);
  ASSERT_EQ(back.reference.kernels.size(), 14u);
  ASSERT_TRUE(back.candidate_side.total.has_value());
  EXPECT_DOUBLE_EQ(back.candidate_side.total->counters.dram_bytes(), 591'104);
  EXPECT_DOUBLE_EQ(back.candidate_side.total->derived.dram_bytes_per_s.value(),
                   r.candidate_side.total->derived.dram_bytes_per_s.value());
  EXPECT_EQ(back.candidate_side.bound.bound, bottleneck::latency_bound);
  EXPECT_EQ(back.reference.bound.bound, bottleneck::launch_bound);
  EXPECT_DOUBLE_EQ(back.candidate_side.achieved_flop_per_s.value(),
                   r.candidate_side.achieved_flop_per_s.value());
  EXPECT_DOUBLE_EQ(back.fusion_ratio.value(), 14.0);
  ASSERT_EQ(back.reference.durations.size(), 14u);
  EXPECT_DOUBLE_EQ(back.reference.durations[4].difference_pct, 25.0);
  EXPECT_DOUBLE_EQ(back.reference.device_time_ns, 124'600);
  EXPECT_EQ(back.candidate_side.cupti->memory.value().bytes, 262'144u);
  EXPECT_TRUE(has_code(back.candidate_side.flags, "percentage_out_of_range"));
  EXPECT_TRUE(has_code(back.flags, "caller_note"));
  EXPECT_EQ(to_json(back), j) << "a restored report writes the same JSON";
}

TEST(ProfileReport, WhatWasNotMeasuredIsNullInJsonNotZero) {
  // A CPU profile: no ceilings, no counters run, no device time.
  counter_source none;
  none.unavailable_reason = "no GPU";
  side_inputs ref, cand;
  const auto r = build_report("p", "c", "cpu", ceilings{}, "", none, ref, cand);
  const auto j = to_json(r);
  EXPECT_TRUE(j["ceilings"]["dram"]["measured_bytes_per_s"].is_null());
  EXPECT_TRUE(j["ceilings"]["dram"]["datasheet_bytes_per_s"].is_null());
  EXPECT_TRUE(j["ceilings"]["l1"]["working_set_bytes"].is_null());
  EXPECT_TRUE(j["ceilings"]["compute"]["fp32"]["measured_flop_per_s"].is_null());
  EXPECT_TRUE(j["sides"]["reference"]["device_time_ns"].is_null());
  EXPECT_TRUE(j["counters"]["clock_control"].is_null());
  EXPECT_TRUE(j["counters"]["tool"].is_null());
  // Measured ones stay numbers (h200(): the DRAM datasheet, L1's measured figure, but no L1
  // datasheet figure).
  const auto k = to_json(make_report(reference_inputs(), candidate_inputs()));
  EXPECT_DOUBLE_EQ(k["ceilings"]["dram"]["datasheet_bytes_per_s"].get<double>(), 4.8 * tb);
  EXPECT_TRUE(k["ceilings"]["l1"]["datasheet_bytes_per_s"].is_null());
  EXPECT_EQ(k["counters"]["clock_control"], "none");
  // Read back: the nulls are the zeros and empty texts they were, and write the same JSON.
  const auto back = report_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.roofs.dram.measured_bytes_per_s, 0.0);
  EXPECT_EQ(back.reference.device_time_ns, 0.0);
  EXPECT_EQ(back.counters.clock_control, "");
  EXPECT_EQ(to_json(back), j);
}

TEST(ProfileReport, JsonOfAnotherSchemaIsRejected) {
  auto j = to_json(make_report(reference_inputs(), candidate_inputs()));
  j["schema"] = "kjudge.profile/0";
  EXPECT_THROW((void)report_from_json(j), kj::error);
  j["schema"] = "kjudge.profile/1";  // read as well: its zeros are what /2 writes as null
  EXPECT_NO_THROW((void)report_from_json(j));
  j["sides"].erase("candidate");
  EXPECT_THROW((void)report_from_json(j), kj::error);
  EXPECT_THROW((void)report_from_json(nlohmann::json::array()), kj::error);
}

TEST(ProfileReport, RenderShowsTotalsSideBySideAndTopKernels) {
  const auto r = make_report(reference_inputs(), candidate_inputs());
  const std::string text = render_report(r, 3);
  EXPECT_NE(text.find("14 / 14"), std::string::npos) << text;
  EXPECT_NE(text.find("launch-bound"), std::string::npos);
  EXPECT_NE(text.find("latency-bound"), std::string::npos);
  EXPECT_NE(text.find("fusion ratio (reference / candidate launches, CUPTI): 14.00"),
            std::string::npos);
  EXPECT_NE(text.find("top 3 of 14 kernels"), std::string::npos);
  EXPECT_NE(text.find("fused_kernel_opt"), std::string::npos);
  EXPECT_NE(text.find("7.42 us"), std::string::npos);
  EXPECT_NE(text.find("grid 128x1x1 block 256x1x1"), std::string::npos);
  EXPECT_NE(text.find("SM SOL 17.1%"), std::string::npos);
  EXPECT_NE(text.find("long_scoreboard 52.6%"), std::string::npos) << "6.0M of 11.4M stall cycles";
  EXPECT_NE(text.find("[reference] duration_disagrees"), std::string::npos);
  EXPECT_EQ(text.find("(int, float)"), std::string::npos) << "parameter lists dropped";
}

TEST(ProfileReport, ShortKernelNameKeepsTheTemplateHead) {
  const std::string name =
      "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
      "at::detail::Array<char*, 2> >(int, at::native::AbsFunctor<float>, "
      "at::detail::Array<char*, 2>)";
  EXPECT_EQ(detail::short_kernel_name(name, 200),
            "at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
            "at::detail::Array<char*, 2> >");
  const auto cut = detail::short_kernel_name(name, 60);
  EXPECT_EQ(cut.size(), 60u);
  EXPECT_EQ(cut.rfind("vectorized_elementwise_kernel<4, at::native::AbsFunctor", 0), 0u) << cut;
  EXPECT_EQ(cut.substr(cut.size() - 4), "...>");
  EXPECT_EQ(detail::short_kernel_name("at::native::reduce_kernel(int)", 20), "reduce_kernel");
  EXPECT_EQ(detail::short_kernel_name("(anonymous namespace)::k(int)", 80),
            "(anonymous namespace)::k");
}

TEST(ProfileReport, AgentSummaryQuotesStallsAsSharesAndBounds) {
  const auto r = make_report(reference_inputs(), candidate_inputs());
  const std::string s = agent_summary(r);
  EXPECT_NE(s.find("share of stall cycles"), std::string::npos) << s;
  EXPECT_NE(s.find("long_scoreboard 52.6%"), std::string::npos) << s;
  EXPECT_EQ(s.find("% of time"), std::string::npos);
  EXPECT_NE(s.find("reference: 124.60 us (device median), 14 kernels (CUPTI), launch-bound"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("candidate: 8.70 us (device median), 1 kernel (CUPTI), latency-bound"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("limited by registers (4 blocks/SM)"), std::string::npos) << s;
  EXPECT_NE(s.find("long_scoreboard is 52.6% of stall cycles"), std::string::npos);
  EXPECT_NE(s.find("achieved occupancy 14.2% is under 80% of the theoretical 50.0%"),
            std::string::npos);
  EXPECT_NE(s.find("fills 0.24 waves of 132 SMs"), std::string::npos);
  EXPECT_NE(s.find("registers limit occupancy to 4 blocks/SM"), std::string::npos);
  const auto lines = std::count(s.begin(), s.end(), '\n');
  EXPECT_LE(lines, 40) << s;
}

TEST(ProfileReport, UncoalescedHintOnlyAboveFourSectorsPerRequest) {
  const auto at = [](double sectors) {
    auto cand = candidate_inputs();
    cand.ncu_kernels[0].global_load_sectors = sectors;  // 20'000 requests
    return agent_summary(make_report(reference_inputs(), cand));
  };
  EXPECT_EQ(at(80'000).find("sectors per request"), std::string::npos) << "4.00 per request";
  // 16 per request: 16-byte vector loads (the fused candidate's cp.async) or scattered words.
  const std::string vec = at(320'000);
  EXPECT_NE(vec.find("global loads touch 16.00 sectors per request: coalesced only if each lane "
                     "loads 16 bytes"),
            std::string::npos)
      << vec;
  // Above 16 no load width explains it.
  const std::string s = at(340'000);
  EXPECT_NE(s.find("global loads touch 17.00 sectors per request (>16"), std::string::npos) << s;
  EXPECT_NE(s.find("uncoalesced access; make a warp's lanes"), std::string::npos);
}

TEST(ProfileReport, CudaCoreHintOnlyWhenEveryFlopCounterWasReported) {
  // A compute-bound candidate (SM throughput 80%) whose counted FLOP are all FP32.
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].sm_throughput_pct = 80.0;
  const std::string all = agent_summary(make_report(reference_inputs(), cand));
  EXPECT_NE(all.find("compute-bound on fp32 CUDA cores"), std::string::npos) << all;
  // ncu left the FP8 tensor counter out (h200() has no FP8 roof, so the class stands): the FP8
  // work, read as 0, might be what dominates, so the hint is not given.
  auto source = ncu_source();
  source.missing_metrics = {"sm__ops_path_tensor_src_fp8.sum"};
  const auto r =
      build_report("p", "c", "NVIDIA H200", h200(), "test roofs", source, reference_inputs(), cand);
  ASSERT_EQ(r.candidate_side.bound.bound, bottleneck::compute_bound)
      << r.candidate_side.bound.reason;
  const std::string partial = agent_summary(r);
  EXPECT_EQ(partial.find("CUDA cores"), std::string::npos) << partial;
}

TEST(ProfileReport, RegisterHintOnlyWhenRegistersAreTheLimiter) {
  auto cand = candidate_inputs();
  cand.ncu_kernels[0].occupancy_limit_registers = 8;  // equal to the block-size limit
  const std::string s = agent_summary(make_report(reference_inputs(), cand));
  EXPECT_EQ(s.find("registers limit occupancy"), std::string::npos) << s;
}

TEST(ProfileReport, AgentSummaryDeltasAgainstABaseline) {
  auto before_cand = candidate_inputs(8'700);
  // The baseline candidate: 5 launches of the seed agent's design.
  before_cand.cupti->launches = checked<launch_summary>::pass(launches(5, 9'200));
  before_cand.ncu_kernels[0].dram_read_bytes = 428'960;
  before_cand.ncu_kernels[0].stall_cycles["barrier"] = 9'000'000;
  const auto baseline = make_report(reference_inputs(), before_cand);
  const auto r = make_report(reference_inputs(), candidate_inputs(6'100));
  const std::string s = agent_summary(r, &baseline);
  EXPECT_NE(s.find("candidate device median 8.70 us → 6.10 us (-29.9%)"), std::string::npos) << s;
  EXPECT_NE(s.find("candidate kernels 5 → 1 (-80.0%)"), std::string::npos);
  EXPECT_NE(s.find("candidate DRAM bytes 691.10 kB → 591.10 kB (-14.5%)"), std::string::npos);
  EXPECT_NE(s.find("bound unchanged: latency-bound"), std::string::npos);
  EXPECT_NE(s.find("top stall (share of stall cycles) barrier"), std::string::npos);
  const std::string worse = agent_summary(baseline, &r);
  EXPECT_NE(worse.find("6.10 us → 8.70 us (+42.6%)"), std::string::npos) << worse;
}

TEST(ProfileReport, LaunchBoundCandidateGetsTheFusionHint) {
  auto cand = candidate_inputs(40'000);  // 7.4 us of kernels in a 40 us forward
  const std::string s = agent_summary(make_report(reference_inputs(), cand));
  EXPECT_NE(s.find("launch-bound ("), std::string::npos) << s;
  EXPECT_NE(s.find("fuse kernels"), std::string::npos);
  EXPECT_EQ(agent_summary(make_report(reference_inputs(), candidate_inputs())).find("fuse kernels"),
            std::string::npos);
}

}  // namespace
}  // namespace kj::profile
