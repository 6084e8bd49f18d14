#include <kjudge/profile/kernel_metrics.hpp>

namespace kj::profile {

std::string_view to_string(flop_type t) noexcept {
  switch (t) {
    case flop_type::fp64:
      return "fp64";
    case flop_type::fp32:
      return "fp32";
    case flop_type::fp16:
      return "fp16";
    case flop_type::bf16:
      return "bf16";
    case flop_type::tensor_fp64:
      return "tensor_fp64";
    case flop_type::tensor_tf32:
      return "tensor_tf32";
    case flop_type::tensor_fp16:
      return "tensor_fp16";
    case flop_type::tensor_bf16:
      return "tensor_bf16";
    case flop_type::tensor_fp8:
      return "tensor_fp8";
  }
  return "unknown";
}

double flop(const flop_counts& f, flop_type t) noexcept {
  switch (t) {
    case flop_type::fp64:
      return f.fp64.flop();
    case flop_type::fp32:
      return f.fp32.flop();
    case flop_type::fp16:
      return f.fp16.flop();
    case flop_type::bf16:
      return f.bf16.flop();
    case flop_type::tensor_fp64:
      return f.tensor_fp64_flop;
    case flop_type::tensor_tf32:
      return f.tensor_tf32_flop;
    case flop_type::tensor_fp16:
      return f.tensor_fp16_flop;
    case flop_type::tensor_bf16:
      return f.tensor_bf16_flop;
    case flop_type::tensor_fp8:
      return f.tensor_fp8_flop;
  }
  return 0;
}

double total_flop(const flop_counts& f) noexcept {
  double sum = 0;
  for (auto t : all_flop_types) sum += flop(f, t);
  return sum;
}

flop_type dominant_flop_type(const flop_counts& f) noexcept {
  flop_type best = flop_type::fp32;
  for (auto t : all_flop_types)
    if (flop(f, t) > flop(f, best)) best = t;
  return best;
}

double kernel_time_sum_ns(const std::vector<kernel_metrics>& kernels) noexcept {
  double sum = 0;
  for (const auto& k : kernels) sum += k.duration_ns;
  return sum;
}

}  // namespace kj::profile
