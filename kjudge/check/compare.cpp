#include <kjudge/check/compare.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/core/error.hpp>

namespace kj::check {

namespace {

std::vector<std::int64_t> unravel(std::size_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(shape[d]);
    if (extent == 0) continue;
    index[d] = static_cast<std::int64_t>(flat % extent);
    flat /= extent;
  }
  return index;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

namespace {

/** An element's value as bits of its own width, made canonical where one value has several
 *  encodings: floating zero of either sign reads 0, every NaN one quiet NaN, a bool byte its
 *  truth (0 or 1). Integers are their bits. */
std::uint64_t canonical_bits(const void* data, dtype t, std::size_t i) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(data) + i * element_size(t);
  switch (t) {
    case dtype::f64: {
      std::uint64_t b;
      std::memcpy(&b, bytes, sizeof b);
      if ((b & 0x7fffffffffffffffULL) == 0) return 0;
      const bool nan =
          (b & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL && (b & 0x000fffffffffffffULL) != 0;
      return nan ? 0x7ff8000000000000ULL : b;
    }
    case dtype::f32: {
      std::uint32_t b;
      std::memcpy(&b, bytes, sizeof b);
      if ((b & 0x7fffffffU) == 0) return 0;
      const bool nan = (b & 0x7f800000U) == 0x7f800000U && (b & 0x007fffffU) != 0;
      return nan ? 0x7fc00000U : b;
    }
    case dtype::f16:
    case dtype::bf16: {
      std::uint16_t b;
      std::memcpy(&b, bytes, sizeof b);
      if ((b & 0x7fffU) == 0) return 0;
      const std::uint16_t exp = t == dtype::f16 ? 0x7c00U : 0x7f80U;
      const bool nan = (b & exp) == exp && (b & (0x7fffU & ~exp)) != 0;
      return nan ? (t == dtype::f16 ? 0x7e00U : 0x7fc0U) : b;
    }
    case dtype::boolean:
      return bytes[0] != 0 ? 1 : 0;
    case dtype::i8:
    case dtype::u8:
    case dtype::i16:
    case dtype::i32:
    case dtype::i64: {
      std::uint64_t b = 0;
      std::memcpy(&b, bytes, element_size(t));  // little-endian: the low bytes
      return b;
    }
  }
  return 0;
}

}  // namespace

bool is_constant(const host_tensor& t) noexcept {
  const std::size_t n = t.numel();
  if (n < 2 || t.data == nullptr) return false;
  const std::uint64_t first = canonical_bits(t.data, t.type, 0);
  for (std::size_t i = 1; i < n; ++i)
    if (canonical_bits(t.data, t.type, i) != first) return false;
  return true;
}

std::uint64_t value_hash(const host_tensor& t) noexcept {
  constexpr std::uint64_t offset_basis = 0xcbf29ce484222325ULL;
  constexpr std::uint64_t prime = 0x100000001b3ULL;
  std::uint64_t h = offset_basis;
  if (t.data == nullptr) return h;
  const std::size_t n = t.numel();
  const std::size_t width = element_size(t.type);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t v = canonical_bits(t.data, t.type, i);
    for (std::size_t k = 0; k < width; ++k, v >>= 8) {  // FNV-1a, a byte at a time
      h ^= v & 0xffU;
      h *= prime;
    }
  }
  return h;
}

namespace {

/** Running sums over the element loop; turned into an output_comparison at the end. */
struct accumulator {
  std::size_t finite_pairs = 0;
  std::size_t relative_pairs = 0;
  double abs_sum = 0;
  double rel_sum = 0;
  // The finite pair with the largest excess |a - e| - (atol + rtol |e|), passing or not.
  double worst_excess = -std::numeric_limits<double>::infinity();
  std::size_t worst_flat = 0;
  double worst_expected = 0;
  double worst_actual = 0;
  std::optional<std::size_t> first_nan, first_inf, first_non_finite;
  std::size_t finite_for_non_finite = 0;  ///< finite candidate where the reference is NaN/Inf
  std::optional<std::size_t> first_finite_for_non_finite;
};

void compare_values(const host_tensor& expected, const host_tensor& actual,
                    std::size_t max_mismatches, output_comparison& out) {
  accumulator acc;
  const double atol = out.tol.atol;
  const double rtol = out.tol.rtol;
  const auto reject = [&](std::size_t i, double e, double a) {
    ++out.mismatch_count;
    if (out.mismatches.size() < max_mismatches)
      out.mismatches.push_back({unravel(i, actual.shape), e, a, std::abs(a - e), {}, {}});
  };

  double ref_min = std::numeric_limits<double>::infinity();
  double ref_max = -ref_min;
  double ref_abs_max = 0;
  for (std::size_t i = 0; i < out.numel; ++i) {
    const double e = load_as_double(expected.data, expected.type, i);
    const double a = load_as_double(actual.data, actual.type, i);
    if (std::isfinite(e)) {
      ref_min = std::min(ref_min, e);
      ref_max = std::max(ref_max, e);
      ref_abs_max = std::max(ref_abs_max, std::abs(e));
      out.reference_sum += e;
      out.reference_abs_sum += std::abs(e);
    }
    if (std::isfinite(e) && std::isfinite(a)) {
      const double err = std::abs(a - e);
      ++acc.finite_pairs;
      acc.abs_sum += err;
      out.max_abs_err = std::max(out.max_abs_err, err);
      if (e != 0) {
        const double rel = err / std::abs(e);
        ++acc.relative_pairs;
        acc.rel_sum += rel;
        out.max_rel_err = std::max(out.max_rel_err, rel);
      }
      const double allowed = atol + rtol * std::abs(e);
      if (err - allowed > acc.worst_excess) {
        acc.worst_excess = err - allowed;
        acc.worst_flat = i;
        acc.worst_expected = e;
        acc.worst_actual = a;
      }
      if (!(err <= allowed)) reject(i, e, a);
      continue;
    }
    // At least one side is NaN or Inf: equal_nan semantics, same-signed Inf matches.
    const bool same = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e);
    if (same) continue;
    if (std::isnan(a)) {
      ++out.nan_count;
      if (!acc.first_nan) acc.first_nan = i;
    }
    if (std::isinf(a)) {
      ++out.inf_count;
      if (!acc.first_inf) acc.first_inf = i;
    }
    if (std::isfinite(a)) {
      ++acc.finite_for_non_finite;
      if (!acc.first_finite_for_non_finite) acc.first_finite_for_non_finite = i;
    }
    if (!acc.first_non_finite) acc.first_non_finite = i;
    reject(i, e, a);
  }

  // Beyond rounding: more than rtol of the largest magnitude, and more than a hundredth of atol
  // (values that are zero but for rounding, as a mean of centred rows, vary by nothing that
  // counts, however small their largest magnitude).
  out.reference_varies =
      ref_max > ref_min && ref_max - ref_min > std::max(rtol * ref_abs_max, 0.01 * atol);
  out.abs_err_count = acc.finite_pairs;
  out.rel_err_count = acc.relative_pairs;
  if (acc.finite_pairs > 0) out.mean_abs_err = acc.abs_sum / static_cast<double>(acc.finite_pairs);
  if (acc.relative_pairs > 0)
    out.mean_rel_err = acc.rel_sum / static_cast<double>(acc.relative_pairs);
  // The worst index points at a finite value out of tolerance when there is one (the NaN and Inf
  // counts name their first position in the message), else at the first non-finite mismatch,
  // else at the finite value closest to its limit.
  const bool finite_failure = acc.finite_pairs > 0 && acc.worst_excess > 0;
  if (finite_failure || (acc.finite_pairs > 0 && !acc.first_non_finite))
    out.worst_index = unravel(acc.worst_flat, actual.shape);
  else if (acc.first_non_finite)
    out.worst_index = unravel(*acc.first_non_finite, actual.shape);
  out.passed = out.mismatch_count == 0;
  if (out.passed) return;

  std::vector<std::string> parts;
  if (out.nan_count > 0)
    parts.push_back(fmt::format("{} NaN in output (first at {})", out.nan_count,
                                shape_string(unravel(*acc.first_nan, actual.shape))));
  if (out.inf_count > 0)
    parts.push_back(fmt::format("{} Inf in output (first at {})", out.inf_count,
                                shape_string(unravel(*acc.first_inf, actual.shape))));
  if (acc.finite_for_non_finite > 0)
    parts.push_back(fmt::format(
        "{} finite where the reference is NaN or Inf (first at {})", acc.finite_for_non_finite,
        shape_string(unravel(*acc.first_finite_for_non_finite, actual.shape))));
  std::string outside = fmt::format("{} of {} elements outside atol={:g} rtol={:g}",
                                    out.mismatch_count, out.numel, atol, rtol);
  if (finite_failure)
    outside += fmt::format(" (max abs err {:.3g}; worst at {}: expected {:.6g}, got {:.6g})",
                           out.max_abs_err, shape_string(out.worst_index), acc.worst_expected,
                           acc.worst_actual);
  parts.push_back(std::move(outside));
  if (out.constant_output)
    parts.push_back(
        fmt::format("every output element is {:.6g}", load_as_double(actual.data, actual.type, 0)));
  out.message = fmt::format("{}", fmt::join(parts, "; "));
}

/** Integer and bool outputs: every element must be equal, exactly (int64 values beyond 2^53
 *  included, which doubles would round together). The error statistics are those of the float
 *  path, from exact differences. */
void compare_integers(const host_tensor& expected, const host_tensor& actual,
                      std::size_t max_mismatches, output_comparison& out) {
  double abs_sum = 0, rel_sum = 0;
  std::size_t relative_pairs = 0;
  std::optional<std::size_t> worst;
  std::int64_t worst_e = 0, worst_a = 0;
  for (std::size_t i = 0; i < out.numel; ++i) {
    const std::int64_t e = load_as_int64(expected.data, expected.type, i);
    const std::int64_t a = load_as_int64(actual.data, actual.type, i);
    const long double diff = static_cast<long double>(a) - static_cast<long double>(e);
    const double err = static_cast<double>(diff < 0 ? -diff : diff);
    abs_sum += err;
    if (e != 0) {
      const double rel = err / std::abs(static_cast<double>(e));
      ++relative_pairs;
      rel_sum += rel;
      out.max_rel_err = std::max(out.max_rel_err, rel);
    }
    if (a == e) continue;
    if (!worst || err > out.max_abs_err) {
      worst = i;
      worst_e = e;
      worst_a = a;
    }
    out.max_abs_err = std::max(out.max_abs_err, err);
    ++out.mismatch_count;
    if (out.mismatches.size() < max_mismatches)
      out.mismatches.push_back({unravel(i, actual.shape), static_cast<double>(e),
                                static_cast<double>(a), err, fmt::format("{}", e),
                                fmt::format("{}", a)});
  }
  out.abs_err_count = out.numel;
  out.rel_err_count = relative_pairs;
  if (out.numel > 0) out.mean_abs_err = abs_sum / static_cast<double>(out.numel);
  if (relative_pairs > 0) out.mean_rel_err = rel_sum / static_cast<double>(relative_pairs);
  // As the float path: the worst mismatch, else (all equal) the first element; none when empty.
  if (out.numel > 0) out.worst_index = unravel(worst.value_or(0), actual.shape);
  out.passed = out.mismatch_count == 0;
  if (out.passed) return;
  out.message = fmt::format(
      "{} of {} elements differ ({} compares exactly; max abs err {:.6g}; worst at {}: expected "
      "{}, got {})",
      out.mismatch_count, out.numel, to_string(expected.type), out.max_abs_err,
      shape_string(out.worst_index), worst_e, worst_a);
  if (out.constant_output)
    out.message +=
        fmt::format("; every output element is {}", load_as_int64(actual.data, actual.type, 0));
}

}  // namespace

tolerance default_tolerance(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
    case dtype::f64:
      return {1e-4, 1e-4};
    case dtype::f16:
    case dtype::bf16:
      return {1e-2, 1e-2};
    case dtype::i8:
    case dtype::u8:
    case dtype::i16:
    case dtype::i32:
    case dtype::i64:
    case dtype::boolean:
      return {0.0, 0.0};
  }
  return {};
}

std::size_t host_tensor::numel() const noexcept {
  std::size_t n = 1;
  for (const std::int64_t d : shape) n *= d > 0 ? static_cast<std::size_t>(d) : 0;
  return n;
}

output_comparison compare(const host_tensor& expected, const host_tensor& actual, tolerance tol,
                          std::size_t max_mismatches) {
  KJ_EXPECTS(expected.data != nullptr || expected.numel() == 0);
  KJ_EXPECTS(actual.data != nullptr || actual.numel() == 0);
  output_comparison out;
  out.expected_shape = expected.shape;
  out.actual_shape = actual.shape;
  out.expected_dtype = expected.type;
  out.actual_dtype = actual.type;
  out.tol = tol;
  out.numel = expected.numel();
  out.shape_ok = expected.shape == actual.shape;
  out.dtype_ok = expected.type == actual.type;
  out.actual_hash = value_hash(actual);
  out.constant_output = is_constant(actual);

  if (!out.shape_ok || !out.dtype_ok) {
    out.message = layout_mismatch(expected.shape, actual.shape, to_string(expected.type),
                                  to_string(actual.type));
    return out;
  }
  if (is_floating(expected.type)) {
    compare_values(expected, actual, max_mismatches, out);
  } else {
    out.tol = {0.0, 0.0};  // integers and bool: exact, whatever tolerance was asked for
    compare_integers(expected, actual, max_mismatches, out);
  }
  return out;
}

std::string layout_mismatch(const std::vector<std::int64_t>& expected_shape,
                            const std::vector<std::int64_t>& actual_shape,
                            std::string_view expected_dtype, std::string_view actual_dtype) {
  std::vector<std::string> parts;
  if (expected_shape != actual_shape)
    parts.push_back(fmt::format("shape mismatch: expected {}, got {}", shape_string(expected_shape),
                                shape_string(actual_shape)));
  if (expected_dtype != actual_dtype)
    parts.push_back(
        fmt::format("dtype mismatch: expected {}, got {}", expected_dtype, actual_dtype));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace kj::check
