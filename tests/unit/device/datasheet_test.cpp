// The datasheet table (lookups by the names the CUDA runtime reports, dense-not-sparse peaks,
// completeness), the derived peaks, the specs JSON and text, and the specs CLI's documentation.

#include <gtest/gtest.h>

#include <set>

#include <kjudge/device/datasheet.hpp>
#include <kjudge/device/specs.hpp>

#include "commands.hpp"
#include "help.hpp"

namespace kj::device {
namespace {

std::string key_for(std::string_view name) {
  const auto* e = find_by_name(name);
  return e ? e->key : std::string("<none>");
}

TEST(Datasheet, FindsTheNamesTheRuntimeReports) {
  EXPECT_EQ(key_for("NVIDIA H200"), "h200_sxm");
  EXPECT_EQ(key_for("NVIDIA H200 NVL"), "h200_nvl");
  EXPECT_EQ(key_for("NVIDIA H100 80GB HBM3"), "h100_sxm");
  EXPECT_EQ(key_for("NVIDIA H100 PCIe"), "h100_pcie");
  EXPECT_EQ(key_for("NVIDIA A100-SXM4-80GB"), "a100_sxm_80gb");
  EXPECT_EQ(key_for("NVIDIA A100 80GB PCIe"), "a100_pcie_80gb");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 4090"), "rtx_4090");
  EXPECT_EQ(key_for("NVIDIA L40S"), "l40s");
  EXPECT_EQ(key_for("NVIDIA B200"), "b200");
  EXPECT_EQ(key_for("NVIDIA L4"), "l4");
  EXPECT_EQ(key_for("NVIDIA A10"), "a10");
}

TEST(Datasheet, MatchingIgnoresCaseAndPunctuationButNotTheModel) {
  EXPECT_EQ(key_for("nvidia a100 sxm4 80gb"), "a100_sxm_80gb");
  EXPECT_EQ(key_for("  NVIDIA   H200  "), "h200_sxm");
  EXPECT_EQ(key_for("Tesla H100-PCIE"), "h100_pcie");
  EXPECT_EQ(key_for("GeForce RTX 4090"), "rtx_4090");
  // Variants whose figures differ must find nothing rather than a wrong row.
  EXPECT_EQ(key_for("NVIDIA H100 NVL"), "<none>");
  EXPECT_EQ(key_for("NVIDIA A100-SXM4-40GB"), "<none>");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 4090 D"), "<none>");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 4090 Laptop GPU"), "<none>");
  EXPECT_EQ(key_for("NVIDIA L40"), "<none>");
  EXPECT_EQ(key_for("NVIDIA A10G"), "<none>");
  EXPECT_EQ(key_for("NVIDIA GB200"), "<none>");
  EXPECT_EQ(key_for("NVIDIA GeForce RTX 3090"), "<none>");
  EXPECT_EQ(key_for(""), "<none>");
}

TEST(Datasheet, EveryEntryFindsItselfByNameAndKey) {
  std::set<std::string> keys;
  for (const auto& e : datasheet()) {
    EXPECT_TRUE(keys.insert(e.key).second) << "duplicate key " << e.key;
    EXPECT_EQ(find_by_key(e.key), &e);
    EXPECT_EQ(find_by_name(e.name), &e) << e.name;
  }
  EXPECT_EQ(find_by_key("h900"), nullptr);
  for (const auto* k : {"a100_sxm_80gb", "a100_pcie_80gb", "h100_sxm", "h100_pcie", "h200_sxm",
                        "b200", "l40s", "rtx_4090"})
    EXPECT_TRUE(keys.count(k)) << k << " missing from the table";
}

TEST(Datasheet, PeaksAreDenseNotSparse) {
  const auto* h100 = find_by_key("h100_sxm");
  ASSERT_NE(h100, nullptr);
  EXPECT_LT(*h100->peak(datatype::bf16_tensor), 1000.0);
  EXPECT_NEAR(*h100->peak(datatype::bf16_tensor), 989.4, 0.05);
  EXPECT_LT(*h100->peak(datatype::fp8_tensor), 2000.0);
  EXPECT_NEAR(*h100->peak(datatype::fp8_tensor), 1978.9, 0.05);
  EXPECT_NEAR(*h100->peak(datatype::tf32_tensor), 494.7, 0.05);
  EXPECT_NEAR(*h100->peak(datatype::fp32), 66.9, 0.05);
  EXPECT_NEAR(*h100->peak(datatype::fp64), 33.5, 0.05);
  EXPECT_NEAR(*h100->peak(datatype::fp64_tensor), 66.9, 0.05);
  const auto* h200 = find_by_key("h200_sxm");
  ASSERT_NE(h200, nullptr);
  EXPECT_LT(*h200->peak(datatype::bf16_tensor), 1000.0);
  EXPECT_LT(*h200->peak(datatype::fp8_tensor), 2000.0);
  EXPECT_NEAR(h200->memory_tbps, 4.8, 1e-9);
  EXPECT_EQ(h200->l2_bytes, std::size_t{60} << 20);
  const auto* a100 = find_by_key("a100_sxm_80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_NEAR(*a100->peak(datatype::bf16_tensor), 312.0, 1e-9);
  EXPECT_FALSE(a100->peak(datatype::fp8_tensor)) << "Ampere has no FP8 tensor cores";
}

TEST(Datasheet, PeaksAreOrderedWherePresent) {
  for (const auto& e : datasheet()) {
    SCOPED_TRACE(e.key);
    const auto fp32 = e.peak(datatype::fp32), tf32 = e.peak(datatype::tf32_tensor),
               bf16 = e.peak(datatype::bf16_tensor), fp16 = e.peak(datatype::fp16_tensor),
               fp8 = e.peak(datatype::fp8_tensor), fp64 = e.peak(datatype::fp64),
               fp64t = e.peak(datatype::fp64_tensor);
    if (fp8 && bf16) {
      EXPECT_GE(*fp8, *bf16);
    }
    if (bf16 && tf32) {
      EXPECT_GE(*bf16, *tf32);
    }
    if (tf32 && fp32) {
      EXPECT_GE(*tf32, *fp32);
    }
    if (fp16 && bf16) {
      EXPECT_GE(*fp16, *bf16);
    }
    if (fp64 && fp32) {
      EXPECT_LE(*fp64, *fp32);
    }
    if (fp64 && fp64t) {
      EXPECT_GE(*fp64t, *fp64);
    }
  }
}

TEST(Datasheet, EveryEntryIsComplete) {
  for (const auto& e : datasheet()) {
    SCOPED_TRACE(e.key);
    EXPECT_FALSE(e.name.empty());
    EXPECT_FALSE(e.architecture.empty());
    EXPECT_GE(e.cc_major, 8);
    EXPECT_GT(e.sm_count, 0);
    EXPECT_GT(e.boost_clock_mhz, 1000);
    EXPECT_GE(e.memory_bytes, std::size_t{16} << 30);
    EXPECT_FALSE(e.memory_type.empty());
    EXPECT_GT(e.memory_tbps, 0.1);
    EXPECT_LT(e.memory_tbps, 10.0);
    EXPECT_GE(e.l2_bytes, std::size_t{4} << 20);
    EXPECT_EQ(e.source, "datasheet");
    EXPECT_FALSE(e.document.empty());
    // Every GPU here has FP32, TF32, FP16, BF16 and INT8; FP8 from Ada and Hopper on.
    for (const auto t : {datatype::fp32, datatype::tf32_tensor, datatype::fp16_tensor,
                         datatype::bf16_tensor, datatype::int8_tensor}) {
      ASSERT_TRUE(e.peak(t)) << to_string(t);
      EXPECT_GT(*e.peak(t), 0.0) << to_string(t);
    }
    EXPECT_EQ(e.peak(datatype::fp8_tensor).has_value(), e.cc_major * 10 + e.cc_minor >= 89);
    // The datasheet FP32 figure agrees with SMs x 128 lanes x 2 x boost (within clock rounding)
    // for the architectures with 128 FP32 lanes per SM, and with 64 lanes on sm_80.
    const auto lanes = fp32_lanes_per_sm(e.cc_major, e.cc_minor);
    ASSERT_TRUE(lanes);
    const double expect = 2.0 * e.sm_count * *lanes * e.boost_clock_mhz * 1e6 / 1e12;
    EXPECT_NEAR(*e.peak(datatype::fp32), expect, 0.03 * expect);
  }
}

TEST(Datasheet, JsonNamesUnitsAndMarksSource) {
  const auto j = to_json(*find_by_key("h100_sxm"));
  EXPECT_EQ(j["source"], "datasheet");
  EXPECT_EQ(j["sparsity"], "dense");
  EXPECT_DOUBLE_EQ(j["peaks"]["bf16_tensor_tflops"].get<double>(), 989.4);
  EXPECT_DOUBLE_EQ(j["peaks"]["int8_tensor_tops"].get<double>(), 1978.9);
  EXPECT_EQ(j["l2_bytes"].get<std::size_t>(), std::size_t{50} << 20);
  EXPECT_DOUBLE_EQ(j["memory_bandwidth_tbps"].get<double>(), 3.35);
  EXPECT_TRUE(to_json(*find_by_key("a100_sxm_80gb"))["peaks"]["fp8_tensor_tflops"].is_null());
}

cuda::device_properties hand_made_h200() {
  cuda::device_properties d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 3201000;
  d.memory_bus_width_bits = 5120;
  d.l2_bytes = std::size_t{60} << 20;
  d.total_memory_bytes = std::size_t{143771} << 20;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  return d;
}

TEST(Derived, Fp32AndDramFromAnH200sProperties) {
  const auto d = derive_peaks(hand_made_h200());
  EXPECT_EQ(d.source, "derived");
  ASSERT_TRUE(d.fp32_lanes_per_sm);
  EXPECT_EQ(*d.fp32_lanes_per_sm, 128);
  ASSERT_TRUE(d.fp32_tflops);
  EXPECT_NEAR(*d.fp32_tflops, 66.9, 0.05);  // 2 x 132 x 128 x 1.98 GHz
  ASSERT_TRUE(d.dram_tbps);
  EXPECT_NEAR(*d.dram_tbps, 4.1, 0.01);  // 2 x 3201 MHz x 5120 / 8
  const auto j = to_json(d);
  EXPECT_EQ(j["source"], "derived");
  EXPECT_NEAR(j["fp32_tflops"].get<double>(), 66.9, 0.05);
}

TEST(Derived, LanesPerArchitectureAndUnknowns) {
  EXPECT_EQ(fp32_lanes_per_sm(8, 0), 64);   // A100
  EXPECT_EQ(fp32_lanes_per_sm(8, 6), 128);  // A10
  EXPECT_EQ(fp32_lanes_per_sm(8, 9), 128);  // Ada
  EXPECT_EQ(fp32_lanes_per_sm(10, 0), 128);
  EXPECT_EQ(fp32_lanes_per_sm(7, 0), 64);
  EXPECT_FALSE(fp32_lanes_per_sm(3, 5));
  auto a100 = hand_made_h200();
  a100.cc_major = 8;
  a100.sm_count = 108;
  a100.sm_clock_khz = 1410000;
  EXPECT_NEAR(*derive_peaks(a100).fp32_tflops, 19.5, 0.05);
  auto odd = hand_made_h200();
  odd.cc_major = 99;
  odd.memory_clock_khz = 0;
  const auto d = derive_peaks(odd);
  EXPECT_FALSE(d.fp32_tflops);
  EXPECT_FALSE(d.dram_tbps);
  EXPECT_TRUE(to_json(d)["fp32_tflops"].is_null());
}

TEST(Derived, AFigureAboveTheDatasheetIsWithheldWithAFlag) {
  const auto* h200 = find_by_key("h200_sxm");
  ASSERT_NE(h200, nullptr);
  // The H200's own properties: both figures within 5% of its datasheet, both kept.
  const auto ok = checked_against_datasheet(derive_peaks(hand_made_h200()), h200);
  EXPECT_TRUE(ok.fp32_tflops && ok.dram_tbps);
  EXPECT_TRUE(ok.flags.empty());
  // A wrong lanes count (256 per SM) derives 134 TFLOP/s: twice the datasheet's 66.9.
  auto wrong = derive_peaks(hand_made_h200());
  wrong.fp32_tflops = *wrong.fp32_tflops * 2;
  const auto c = checked_against_datasheet(wrong, h200);
  EXPECT_FALSE(c.fp32_tflops);
  EXPECT_TRUE(c.dram_tbps);
  ASSERT_EQ(c.flags.size(), 1u);
  EXPECT_EQ(c.flags[0].code, derived_fp32_code);
  EXPECT_TRUE(to_json(c)["fp32_tflops"].is_null());
  EXPECT_EQ(to_json(c)["flags"][0]["code"], derived_fp32_code);
  // No datasheet row: nothing to compare with, nothing withheld.
  EXPECT_TRUE(checked_against_datasheet(wrong, nullptr).fp32_tflops);
}

TEST(Specs, JsonIsVersionedAndCarriesTheTableOnRequest) {
  specs_report r;
  r.gpu_available = true;
  r.driver_version = 13000;
  r.runtime_version = 12040;
  gpu_specs g;
  g.properties = hand_made_h200();
  g.derived = derive_peaks(g.properties);
  g.datasheet = find_by_name(g.properties.name);
  g.nvml.reason = "NVML not available: test";
  r.gpus.push_back(g);
  const auto j = to_json(r, false);
  EXPECT_EQ(j["schema"], "kjudge.specs/1");
  EXPECT_EQ(j["driver_version"], "13.0");
  EXPECT_EQ(j["runtime_version"], "12.4");
  EXPECT_FALSE(j.contains("datasheet"));
  ASSERT_EQ(j["devices"].size(), 1u);
  const auto& dev = j["devices"][0];
  EXPECT_EQ(dev["sm_clock_mhz"].get<double>(), 1980.0);
  EXPECT_EQ(dev["memory_bus_width_bits"], 5120);
  EXPECT_EQ(dev["l2_bytes"].get<std::size_t>(), std::size_t{60} << 20);
  EXPECT_EQ(dev["datasheet_key"], "h200_sxm");
  EXPECT_EQ(dev["datasheet"]["source"], "datasheet");
  EXPECT_EQ(dev["derived"]["source"], "derived");
  EXPECT_FALSE(dev["nvml"]["available"].get<bool>());
  EXPECT_TRUE(dev["nvml"]["power_watts"].is_null());
  EXPECT_EQ(to_json(r, true)["datasheet"].size(), datasheet().size());
}

TEST(Specs, TextShowsTheDeviceTheDatasheetRowOrItsAbsence) {
  specs_report r;
  r.gpu_available = true;
  gpu_specs g;
  g.properties = hand_made_h200();
  g.derived = derive_peaks(g.properties);
  g.datasheet = find_by_name(g.properties.name);
  g.nvml.available = true;
  g.nvml.sm_clock_mhz = 1980;
  g.nvml.clock_event_reasons = std::vector<std::string>{"sw_power_cap"};
  r.gpus.push_back(g);
  auto text = render_specs_text(r);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos) << text;
  EXPECT_NE(text.find("66.9 TFLOP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("989.4 TFLOP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("derived"), std::string::npos) << text;
  EXPECT_NE(text.find("sw_power_cap"), std::string::npos) << text;
  r.gpus[0].properties.name = "NVIDIA Mystery GPU";
  r.gpus[0].datasheet = nullptr;
  text = render_specs_text(r);
  EXPECT_NE(text.find("no datasheet entry for NVIDIA Mystery GPU"), std::string::npos) << text;
  specs_report none;
  none.gpu_unavailable_reason = "no CUDA device";
  none.runtime_version = 13000;
  text = render_specs_text(none);
  EXPECT_NE(text.find("driver: none, runtime: CUDA 13.0"), std::string::npos) << text;
  const auto table = render_datasheet_table();
  for (const auto& e : datasheet()) EXPECT_NE(table.find(e.key), std::string::npos) << e.key;
  EXPECT_NE(table.find("dense"), std::string::npos);
  EXPECT_EQ(table.find("1979"), std::string::npos) << "a sparse H100 figure in the table";
}

TEST(Cli, EverySpecsOptionIsDocumented) {
  CLI::App app;
  app::specs_args args;
  auto* cmd = app::add_specs_command(app, args);
  const auto doc = app::help_section("specs");
  ASSERT_FALSE(doc.empty()) << "no '## kjudge specs' section in docs/cli.md";
  int checked = 0;
  for (const auto* opt : cmd->get_options()) {
    for (const auto& name : opt->get_lnames()) {
      EXPECT_NE(doc.find("`--" + name), std::string::npos)
          << "--" << name << " is not in docs/cli.md";
      ++checked;
    }
  }
  EXPECT_GE(checked, 2);
  EXPECT_NE(app::help_section("").find("`specs`"), std::string::npos)
      << "specs is not in the command table of docs/cli.md";
}

}  // namespace
}  // namespace kj::device
