#include <kjudge/roofline/check.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include <kjudge/profile/invariants.hpp>

namespace kj::roofline {

namespace {

using profile::checked;
using profile::severity_error;
using profile::severity_warning;

constexpr double tera = 1e12;

/** Rules 19 and 20 and a positive, finite best: what every rate figure must satisfy. */
std::vector<flag> check_run(const char* label, double best, double launch_ms,
                            std::size_t repetitions) {
  std::vector<flag> out;
  if (!(best > 0) || !std::isfinite(best))
    out.push_back({"figure_not_positive", severity_error,
                   fmt::format("{}: best figure {} is not a positive number", label, best)});
  if (!(launch_ms >= min_launch_ms))
    out.push_back({"launch_too_short", severity_error,
                   fmt::format("{}: timed launches last {:.3f} ms, under {:.0f} ms: a short "
                               "launch measures launch latency, not throughput (rule 19)",
                               label, launch_ms, min_launch_ms)});
  if (repetitions < min_repetitions)
    out.push_back({"few_repetitions", severity_warning,
                   fmt::format("{}: best of {} repetitions, fewer than {} (rule 20)", label,
                               repetitions, min_repetitions)});
  return out;
}

checked<double> check_bandwidth_figure(const char* label, const bandwidth_figure& f,
                                       double datasheet_tbps, std::vector<flag>& all) {
  if (!f.measured())
    return checked<double>::missing(fmt::format("{} not measured{}{}", label,
                                                f.unavailable_reason.empty() ? "" : ": ",
                                                f.unavailable_reason));
  auto flags = check_run(label, f.best_tbps, f.launch_ms, f.repetitions_tbps.size());
  profile::bandwidth_ceiling c;
  c.measured_bytes_per_s = f.best_tbps * tera;
  c.datasheet_bytes_per_s = datasheet_tbps * tera;
  append(flags, profile::check_bandwidth_ceiling(label, c));
  append(all, flags);
  return profile::make_checked(f.best_tbps, std::move(flags));
}

checked<double> check_compute_figure(const char* label, profile::flop_type type,
                                     const compute_figure& f, double datasheet_tflops,
                                     std::vector<flag>& all) {
  if (!f.measured())
    return checked<double>::missing(fmt::format("{} not measured{}{}", label,
                                                f.unavailable_reason.empty() ? "" : ": ",
                                                f.unavailable_reason));
  auto flags = check_run(label, f.best_tflops, f.launch_ms, f.repetitions_tflops.size());
  profile::compute_ceiling c;
  c.measured_flop_per_s = f.best_tflops * tera;
  c.datasheet_dense_flop_per_s = datasheet_tflops * tera;
  append(flags, profile::check_compute_ceiling(type, c));
  append(all, flags);
  return profile::make_checked(f.best_tflops, std::move(flags));
}

checked<double> check_latency_figure(const char* label, const latency_figure& f,
                                     std::vector<flag>& all) {
  if (!f.measured())
    return checked<double>::missing(fmt::format("{} not measured{}{}", label,
                                                f.unavailable_reason.empty() ? "" : ": ",
                                                f.unavailable_reason));
  std::vector<flag> flags;
  if (!(f.best_us > 0) || !std::isfinite(f.best_us))
    flags.push_back(
        {"figure_not_positive", severity_error,
         fmt::format("{}: best figure {} us is not a positive time", label, f.best_us)});
  if (!(f.repetition_ms >= min_launch_ms))
    flags.push_back(
        {"repetition_too_short", severity_warning,
         fmt::format("{}: repetitions last {:.3f} ms, under {:.0f} ms: the event resolution "
                     "(~0.5 us) weighs on the figure",
                     label, f.repetition_ms, min_launch_ms)});
  if (f.repetitions_us.size() < min_repetitions)
    flags.push_back({"few_repetitions", severity_warning,
                     fmt::format("{}: best of {} repetitions, fewer than {} (rule 20)", label,
                                 f.repetitions_us.size(), min_repetitions)});
  append(all, flags);
  return profile::make_checked(f.best_us, std::move(flags));
}

/** Invariant 7 on one pair of levels (near must not be slower than far). An out-of-order pair
 *  fails both: which of the two is wrong cannot be told from the numbers alone. */
void check_pair(checked<double>& near, double near_tbps, checked<double>& far, double far_tbps,
                bool near_is_l1, bool far_is_dram, std::vector<flag>& all) {
  if (near_tbps <= 0 || far_tbps <= 0) return;
  profile::ceilings c;
  (near_is_l1 ? c.l1 : c.l2).measured_bytes_per_s = near_tbps * tera;
  (far_is_dram ? c.dram : c.l2).measured_bytes_per_s = far_tbps * tera;
  for (const auto& f : profile::check_ceiling_order(c)) {
    near = profile::add_flag(std::move(near), f);
    far = profile::add_flag(std::move(far), f);
    all.push_back(f);
  }
}

double passing(const checked<double>& c) {
  return c.ok() ? c.value() : 0.0;
}

}  // namespace

double ridge_flop_per_byte(double flop_per_s, double bytes_per_s) noexcept {
  return flop_per_s > 0 && bytes_per_s > 0 ? flop_per_s / bytes_per_s : 0.0;
}

checked_roofline check_roofline(const roofline_result& r) {
  return check_roofline(r, device::find_by_name(r.gpu.name));
}

checked_roofline check_roofline(const roofline_result& r,
                                const device::datasheet_entry* datasheet) {
  using device::datatype;
  using profile::flop_type;
  checked_roofline out;
  out.datasheet = datasheet;
  auto& all = out.flags;
  append(all, r.flags);
  const double dram_peak = datasheet != nullptr ? datasheet->memory_tbps : 0.0;
  auto peak = [datasheet](datatype t) {
    return datasheet != nullptr ? datasheet->peak(t).value_or(0.0) : 0.0;
  };

  out.dram_read_tbps = check_bandwidth_figure("DRAM read", r.dram_read, dram_peak, all);
  out.dram_write_tbps = check_bandwidth_figure("DRAM write", r.dram_write, dram_peak, all);
  out.dram_copy_tbps = check_bandwidth_figure("DRAM copy", r.dram_copy, dram_peak, all);
  out.l2_tbps = check_bandwidth_figure("L2", r.l2_read, 0.0, all);
  out.l1_tbps = check_bandwidth_figure("L1/shared", r.shared_read, 0.0, all);

  // Nearest pair first: an L2 figure that failed against L1 is not compared with DRAM again.
  check_pair(out.l1_tbps, passing(out.l1_tbps), out.l2_tbps, passing(out.l2_tbps), true, false,
             all);
  // Every DRAM figure against L2 (each one is shown), L2 flagged by the first that breaks the
  // order; then the DRAM ceiling is the best figure still passing, with its working set.
  const double l2_tbps = passing(out.l2_tbps);
  const bandwidth_figure* dram_source = nullptr;
  for (auto [value, figure] : {std::pair{&out.dram_read_tbps, &r.dram_read},
                               std::pair{&out.dram_write_tbps, &r.dram_write},
                               std::pair{&out.dram_copy_tbps, &r.dram_copy}}) {
    checked<double> l2 = out.l2_tbps;
    check_pair(l2, l2_tbps, *value, passing(*value), false, true, all);
    if (out.l2_tbps.ok() && !l2.ok()) out.l2_tbps = l2;
    if (value->ok() && (!out.dram_tbps.ok() || value->value() > out.dram_tbps.value())) {
      out.dram_tbps = *value;
      dram_source = figure;
    }
  }
  if (dram_source == nullptr)
    out.dram_tbps = checked<double>::missing("no DRAM figure passed its checks");

  if (out.l1_tbps.ok() && r.gpu.sm_count > 0)
    out.l1_per_sm_tbps = checked<double>::pass(out.l1_tbps.value() / r.gpu.sm_count);
  else
    out.l1_per_sm_tbps = checked<double>::missing("needs a passing L1/shared figure and SMs");

  out.fp32_tflops =
      check_compute_figure("FP32 FMA", flop_type::fp32, r.fp32_fma, peak(datatype::fp32), all);
  out.fp64_tflops =
      check_compute_figure("FP64 FMA", flop_type::fp64, r.fp64_fma, peak(datatype::fp64), all);
  out.fp16_tensor_tflops = check_compute_figure("FP16 tensor", flop_type::tensor_fp16,
                                                r.fp16_tensor, peak(datatype::fp16_tensor), all);
  out.bf16_tensor_tflops = check_compute_figure("BF16 tensor", flop_type::tensor_bf16,
                                                r.bf16_tensor, peak(datatype::bf16_tensor), all);

  out.launch_stream_us =
      check_latency_figure("launch on a stream (host-issued)", r.launch_stream, all);
  out.launch_stream_queued_us =
      check_latency_figure("launch on a stream (queued)", r.launch_stream_queued, all);
  out.launch_graph_us = check_latency_figure("launch in a graph", r.launch_graph, all);
  out.round_trip_us = check_latency_figure("host-device round trip", r.round_trip, all);

  auto ridge = [&out](const checked<double>& compute, const char* what) {
    if (!compute.ok() || !out.dram_tbps.ok())
      return checked<double>::missing(
          fmt::format("the {} ridge needs passing {} and DRAM ceilings", what, what));
    return checked<double>::pass(ridge_flop_per_byte(compute.value(), out.dram_tbps.value()));
  };
  out.fp32_ridge_flop_per_byte = ridge(out.fp32_tflops, "FP32");
  out.bf16_ridge_flop_per_byte = ridge(out.bf16_tensor_tflops, "BF16");

  auto& c = out.ceilings;
  c.l1 = {passing(out.l1_tbps) * tera, 0.0, r.shared_read.working_set_bytes};
  c.l2 = {passing(out.l2_tbps) * tera, 0.0, r.l2_read.working_set_bytes};
  c.dram = {passing(out.dram_tbps) * tera, dram_peak * tera,
            dram_source != nullptr ? dram_source->working_set_bytes : 0};
  c.at(flop_type::fp32) = {passing(out.fp32_tflops) * tera, peak(datatype::fp32) * tera};
  c.at(flop_type::fp64) = {passing(out.fp64_tflops) * tera, peak(datatype::fp64) * tera};
  c.at(flop_type::tensor_fp16) = {passing(out.fp16_tensor_tflops) * tera,
                                  peak(datatype::fp16_tensor) * tera};
  c.at(flop_type::tensor_bf16) = {passing(out.bf16_tensor_tflops) * tera,
                                  peak(datatype::bf16_tensor) * tera};
  // Tensor work the microbenchmarks do not measure has the dense datasheet peak alone as its roof
  // (rule 15), so a TF32, FP64 or FP8 tensor kernel is still placed under one.
  c.at(flop_type::tensor_tf32) = {0.0, peak(datatype::tf32_tensor) * tera};
  c.at(flop_type::tensor_fp64) = {0.0, peak(datatype::fp64_tensor) * tera};
  c.at(flop_type::tensor_fp8) = {0.0, peak(datatype::fp8_tensor) * tera};
  return out;
}

nlohmann::json to_json(const checked_roofline& c) {
  nlohmann::json j = nlohmann::json::object();
  j["dram_tbps"] = c.dram_tbps;
  j["dram_read_tbps"] = c.dram_read_tbps;
  j["dram_write_tbps"] = c.dram_write_tbps;
  j["dram_copy_tbps"] = c.dram_copy_tbps;
  j["l2_tbps"] = c.l2_tbps;
  j["l1_tbps"] = c.l1_tbps;
  j["l1_per_sm_tbps"] = c.l1_per_sm_tbps;
  j["fp32_tflops"] = c.fp32_tflops;
  j["fp64_tflops"] = c.fp64_tflops;
  j["fp16_tensor_tflops"] = c.fp16_tensor_tflops;
  j["bf16_tensor_tflops"] = c.bf16_tensor_tflops;
  j["launch_stream_us"] = c.launch_stream_us;
  j["launch_stream_queued_us"] = c.launch_stream_queued_us;
  j["launch_graph_us"] = c.launch_graph_us;
  j["round_trip_us"] = c.round_trip_us;
  j["fp32_ridge_flop_per_byte"] = c.fp32_ridge_flop_per_byte;
  j["bf16_ridge_flop_per_byte"] = c.bf16_ridge_flop_per_byte;
  j["datasheet"] = c.datasheet != nullptr ? nlohmann::json(c.datasheet->key) : nlohmann::json();
  return j;
}

}  // namespace kj::roofline
