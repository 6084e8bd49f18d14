// The datasheet table. Every peak is DENSE: where NVIDIA prints only a "with sparsity" figure, it
// is halved here; where it prints "dense | sparse", the dense one is taken. Memory "GB" on these
// datasheets are read as GiB. Each row cites the document its figures come from.

#include <optional>

#include "datasheet_rows.hpp"

namespace kj::device::detail {

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t gib = std::size_t{1} << 30;
constexpr std::optional<double> none = std::nullopt;

/** In datatype order: FP64, FP64 tensor, FP32, TF32, FP16, BF16, FP8, INT8 (all dense). */
std::array<std::optional<double>, datatype_count> dense(
    std::optional<double> fp64, std::optional<double> fp64_tensor, std::optional<double> fp32,
    std::optional<double> tf32, std::optional<double> fp16, std::optional<double> bf16,
    std::optional<double> fp8, std::optional<double> int8) {
  return {fp64, fp64_tensor, fp32, tf32, fp16, bf16, fp8, int8};
}

std::vector<datasheet_row> build_rows() {
  std::vector<datasheet_row> rows;
  const auto add = [&rows](datasheet_entry e, name_rule r) {
    rows.push_back({std::move(e), std::move(r)});
  };

  // A100 SXM4 80GB and A100 80GB PCIe. Source: "NVIDIA A100 Tensor Core GPU" datasheet (80GB SXM
  // and 80GB PCIe columns): FP64 9.7, FP64 tensor 19.5, FP32 19.5, TF32 156 | 312*, BF16/FP16
  // 312 | 624*, INT8 624 | 1248* TOPS (* with sparsity); 2,039 GB/s (SXM), 1,935 GB/s (PCIe).
  // No FP8 on Ampere. 108 SMs at 1410 MHz boost and 40 MiB L2 from the "NVIDIA A100 Tensor Core
  // GPU Architecture" whitepaper.
  add({.key = "a100_sxm_80gb",
       .name = "NVIDIA A100 SXM4 80GB",
       .architecture = "Ampere",
       .cc_major = 8,
       .cc_minor = 0,
       .sm_count = 108,
       .boost_clock_mhz = 1410,
       .memory_bytes = 80 * gib,
       .memory_type = "HBM2e",
       .memory_tbps = 2.039,
       .l2_bytes = 40 * mib,
       .peaks = dense(9.7, 19.5, 19.5, 156, 312, 312, none, 624),
       .document = "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM)",
       .note = ""},
      {.all_of = {{"a100"}, {"80gb"}, {"sxm4", "sxm"}}, .none_of = {"pcie"}});
  add({.key = "a100_pcie_80gb",
       .name = "NVIDIA A100 PCIe 80GB",
       .architecture = "Ampere",
       .cc_major = 8,
       .cc_minor = 0,
       .sm_count = 108,
       .boost_clock_mhz = 1410,
       .memory_bytes = 80 * gib,
       .memory_type = "HBM2e",
       .memory_tbps = 1.935,
       .l2_bytes = 40 * mib,
       .peaks = dense(9.7, 19.5, 19.5, 156, 312, 312, none, 624),
       .document = "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe)",
       .note = "the datasheet gives the SXM peaks; at 300 W the card often runs below boost"},
      {.all_of = {{"a100"}, {"80gb"}, {"pcie"}}, .none_of = {"sxm4", "sxm"}});

  // H100 SXM5 and H100 PCIe. Source: "NVIDIA H100 Tensor Core GPU Architecture" whitepaper
  // (H100 SXM5 and H100 PCIe columns, which give dense/sparse pairs), consistent with the
  // rounded "NVIDIA H100 Tensor Core GPU" datasheet (SXM: 34, 67, 67, 989*, 1979*, 1979*,
  // 3958*, 3958* TOPS; PCIe: 26, 51, 51, 756*, 1513*, 1513*, 3026*, 3026*). The whitepaper's
  // CUDA-core figures assume the 1980 MHz (SXM) / 1755 MHz (PCIe) boost clock, its tensor
  // figures 1830 / 1620 MHz.
  add({.key = "h100_sxm",
       .name = "NVIDIA H100 SXM",
       .architecture = "Hopper",
       .cc_major = 9,
       .cc_minor = 0,
       .sm_count = 132,
       .boost_clock_mhz = 1980,
       .memory_bytes = 80 * gib,
       .memory_type = "HBM3",
       .memory_tbps = 3.35,
       .l2_bytes = 50 * mib,
       .peaks = dense(33.5, 66.9, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9),
       .document = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5); "
                   "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM)",
       .note = "tensor peaks at 1830 MHz, CUDA-core peaks at 1980 MHz"},
      {.all_of = {{"h100"}}, .none_of = {"pcie", "nvl", "94gb", "96gb"}});
  add({.key = "h100_pcie",
       .name = "NVIDIA H100 PCIe",
       .architecture = "Hopper",
       .cc_major = 9,
       .cc_minor = 0,
       .sm_count = 114,
       .boost_clock_mhz = 1755,
       .memory_bytes = 80 * gib,
       .memory_type = "HBM2e",
       .memory_tbps = 2.0,
       .l2_bytes = 50 * mib,
       .peaks = dense(25.6, 51.2, 51.2, 378, 756, 756, 1513, 1513),
       .document = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 PCIe); "
                   "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe)",
       .note = "tensor peaks at 1620 MHz, CUDA-core peaks at 1755 MHz"},
      {.all_of = {{"h100"}, {"pcie"}}, .none_of = {"nvl"}});

  // H200 SXM and H200 NVL. Source: "NVIDIA H200 Tensor Core GPU" datasheet. SXM: FP64 34,
  // FP64 tensor 67, FP32 67, TF32 989*, BF16/FP16 1,979*, FP8/INT8 3,958* (the GH100 figures of
  // H100 SXM, kept at the whitepaper's precision); 141 GB HBM3e at 4.8 TB/s. NVL: 30, 60, 60,
  // 835*, 1,671*, 1,671*, 3,341*, 3,341*. The 60 MiB L2 is what an H200 reports
  // (docs/benchmarks.md).
  add({.key = "h200_sxm",
       .name = "NVIDIA H200 SXM",
       .architecture = "Hopper",
       .cc_major = 9,
       .cc_minor = 0,
       .sm_count = 132,
       .boost_clock_mhz = 1980,
       .memory_bytes = 141 * gib,
       .memory_type = "HBM3e",
       .memory_tbps = 4.8,
       .l2_bytes = 60 * mib,
       .peaks = dense(33.5, 66.9, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9),
       .document = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)",
       .note = "same GH100 compute as H100 SXM; tensor peaks at 1830 MHz"},
      {.all_of = {{"h200"}}, .none_of = {"nvl"}});
  add({.key = "h200_nvl",
       .name = "NVIDIA H200 NVL",
       .architecture = "Hopper",
       .cc_major = 9,
       .cc_minor = 0,
       .sm_count = 132,
       .boost_clock_mhz = 1785,
       .memory_bytes = 141 * gib,
       .memory_type = "HBM3e",
       .memory_tbps = 4.8,
       .l2_bytes = 60 * mib,
       .peaks = dense(30, 60, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5),
       .document = "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL)",
       .note = "600 W PCIe card; lower clocks than the SXM module"},
      {.all_of = {{"h200"}, {"nvl"}}, .none_of = {}});

  // B200. Source: "NVIDIA HGX B200" / "NVIDIA DGX B200" datasheets, 8-GPU figures divided by 8:
  // FP64 and FP64 tensor 296 -> 37, FP32 600 -> 75, TF32 18 P* -> 1,125, FP16/BF16 36 P* ->
  // 2,250, FP8 and INT8 72 P* -> 4,500; 1,440 GB at 64 TB/s -> 180 GB at 8 TB/s. FP6/FP4 are not
  // in this table. 148 SMs, 1965 MHz and 126 MiB L2 are what a B200 reports (not datasheet lines).
  add({.key = "b200",
       .name = "NVIDIA B200",
       .architecture = "Blackwell",
       .cc_major = 10,
       .cc_minor = 0,
       .sm_count = 148,
       .boost_clock_mhz = 1965,
       .memory_bytes = 180 * gib,
       .memory_type = "HBM3e",
       .memory_tbps = 8.0,
       .l2_bytes = 126 * mib,
       .peaks = dense(37, 37, 75, 1125, 2250, 2250, 4500, 4500),
       .document = "NVIDIA HGX B200 and DGX B200 datasheets (8-GPU figures / 8)",
       .note = "FP4/FP6 tensor peaks not listed here"},
      {.all_of = {{"b200"}}, .none_of = {}});

  // L40S. Source: "NVIDIA L40S GPU" datasheet ("dense | sparse" pairs): FP32 91.6, TF32 183,
  // BF16/FP16 362.05, FP8 733, INT8 733 TOPS; 48 GB GDDR6 with ECC at 864 GB/s. No FP64 line
  // (Ada runs FP64 at 1/64 of FP32). 142 SMs, 2520 MHz boost, 96 MiB L2 from the "NVIDIA Ada
  // GPU Architecture" whitepaper.
  add({.key = "l40s",
       .name = "NVIDIA L40S",
       .architecture = "Ada Lovelace",
       .cc_major = 8,
       .cc_minor = 9,
       .sm_count = 142,
       .boost_clock_mhz = 2520,
       .memory_bytes = 48 * gib,
       .memory_type = "GDDR6",
       .memory_tbps = 0.864,
       .l2_bytes = 96 * mib,
       .peaks = dense(none, none, 91.6, 183, 362.05, 362.05, 733, 733),
       .document = "NVIDIA L40S GPU datasheet",
       .note = "FP64 not listed (1/64 of the FP32 rate on Ada)"},
      {.all_of = {{"l40s"}}, .none_of = {}});

  // GeForce RTX 4090. Source: "NVIDIA Ada GPU Architecture" whitepaper (GeForce RTX 4090 column,
  // dense/sparse pairs): FP32 82.6, TF32 82.6, FP16 330.3 with FP16 accumulate (165.2 with FP32
  // accumulate), BF16 165.2 (FP32 accumulate), FP8 660.6 with FP16 accumulate (330.3 with FP32),
  // INT8 660.6 TOPS; 24 GB GDDR6X at 1,008 GB/s; 128 SMs, 2520 MHz boost, 72 MiB L2. The table
  // keeps the highest dense rate of each type, so that no kernel can exceed its roof.
  add({.key = "rtx_4090",
       .name = "NVIDIA GeForce RTX 4090",
       .architecture = "Ada Lovelace",
       .cc_major = 8,
       .cc_minor = 9,
       .sm_count = 128,
       .boost_clock_mhz = 2520,
       .memory_bytes = 24 * gib,
       .memory_type = "GDDR6X",
       .memory_tbps = 1.008,
       .l2_bytes = 72 * mib,
       .peaks = dense(none, none, 82.6, 82.6, 330.3, 165.2, 660.6, 660.6),
       .document = "NVIDIA Ada GPU Architecture whitepaper (GeForce RTX 4090)",
       .note = "FP16 and FP8 with FP16 accumulate; half that with FP32 accumulate (PyTorch's "
               "default for FP16 GEMMs); FP64 not listed"},
      {.all_of = {{"4090", "rtx4090"}}, .none_of = {"d", "laptop", "mobile"}});

  // L4. Source: "NVIDIA L4 Tensor Core GPU" datasheet (sparse figures, halved): FP32 30.3,
  // TF32 120* -> 60, FP16/BF16 242* -> 121, FP8 485* -> 242.5, INT8 485* -> 242.5 TOPS; 24 GB
  // GDDR6 at 300 GB/s. 58 SMs, 2040 MHz, 48 MiB L2 (Ada whitepaper / what an L4 reports).
  add({.key = "l4",
       .name = "NVIDIA L4",
       .architecture = "Ada Lovelace",
       .cc_major = 8,
       .cc_minor = 9,
       .sm_count = 58,
       .boost_clock_mhz = 2040,
       .memory_bytes = 24 * gib,
       .memory_type = "GDDR6",
       .memory_tbps = 0.300,
       .l2_bytes = 48 * mib,
       .peaks = dense(none, none, 30.3, 60, 121, 121, 242.5, 242.5),
       .document = "NVIDIA L4 Tensor Core GPU datasheet",
       .note = "FP64 not listed"},
      {.all_of = {{"l4"}}, .none_of = {}});

  // A10. Source: "NVIDIA A10 Tensor Core GPU" datasheet ("dense | sparse" pairs): FP32 31.2,
  // TF32 62.5, BF16/FP16 125, INT8 250 TOPS; 24 GB GDDR6 at 600 GB/s. 72 SMs, 1695 MHz boost,
  // 6 MiB L2 (GA102 as configured on the A10).
  add({.key = "a10",
       .name = "NVIDIA A10",
       .architecture = "Ampere",
       .cc_major = 8,
       .cc_minor = 6,
       .sm_count = 72,
       .boost_clock_mhz = 1695,
       .memory_bytes = 24 * gib,
       .memory_type = "GDDR6",
       .memory_tbps = 0.600,
       .l2_bytes = 6 * mib,
       .peaks = dense(none, none, 31.2, 62.5, 125, 125, none, 250),
       .document = "NVIDIA A10 Tensor Core GPU datasheet",
       .note = "FP64 not listed; no FP8 on Ampere"},
      {.all_of = {{"a10"}}, .none_of = {}});
  return rows;
}

}  // namespace

const std::vector<datasheet_row>& datasheet_rows() {
  static const std::vector<datasheet_row> rows = build_rows();
  return rows;
}

}  // namespace kj::device::detail
