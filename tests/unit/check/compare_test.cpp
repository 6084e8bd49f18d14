#include <kjudge/check/compare.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using kj::dtype;
using kj::check::compare;
using kj::check::host_tensor;
using kj::check::tolerance;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();
using shape_t = std::vector<std::int64_t>;

template <class T>
host_tensor view(const std::vector<T>& v, dtype t, shape_t shape) {
  return host_tensor{t, std::move(shape), v.data()};
}

host_tensor f64(const std::vector<double>& v, shape_t shape) {
  return view(v, dtype::f64, shape);
}
host_tensor f64(const std::vector<double>& v) {
  return view(v, dtype::f64, {static_cast<std::int64_t>(v.size())});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(compare, identical_outputs_pass_with_no_message) {
  const std::vector<float> v = {1.0f, -2.0f, 3.5f, 0.0f, 1e-30f, 7.0f};
  const auto t = view(v, dtype::f32, {2, 3});
  const auto r = compare(t, t, kj::check::default_tolerance(dtype::f32));
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.shape_ok);
  EXPECT_TRUE(r.dtype_ok);
  EXPECT_EQ(r.numel, 6u);
  EXPECT_EQ(r.mismatch_count, 0u);
  EXPECT_EQ(r.max_abs_err, 0.0);
  EXPECT_TRUE(r.mismatches.empty());
  EXPECT_TRUE(r.message.empty());
  EXPECT_FALSE(r.constant_output);
  EXPECT_EQ(r.expected_shape, (shape_t{2, 3}));
  EXPECT_EQ(r.actual_shape, (shape_t{2, 3}));
}

TEST(compare, tolerance_is_atol_plus_rtol_times_expected) {
  const tolerance tol{1e-4, 1e-4};
  const std::vector<double> e = {1.0, 0.0, 1000.0};
  // 1.0: allowed 2e-4; 0.0: allowed exactly atol (inclusive); 1000: allowed 0.1001.
  const std::vector<double> inside = {1.0 + 1.5e-4, 1e-4, 1000.1};
  EXPECT_TRUE(compare(f64(e), f64(inside), tol).passed);
  const std::vector<double> just_outside = {1.0 + 2.5e-4, 0.0, 1000.0};
  const auto r = compare(f64(e), f64(just_outside), tol);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatch_count, 1u);
  EXPECT_EQ(r.worst_index, (shape_t{0}));
  const std::vector<double> zero_ref_off = {1.0, 1.1e-4, 1000.0};
  EXPECT_FALSE(compare(f64(e), f64(zero_ref_off), tol).passed);
}

TEST(compare, reports_mismatches_in_order_with_multidimensional_indices) {
  std::vector<float> e(24), a(24);
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = a[i] = static_cast<float>(i) * 0.01f;
  a[5] += 1e-3f;   // [0, 1, 1]
  a[23] += 2e-3f;  // [1, 2, 3], the worst
  a[14] -= 5e-4f;  // [1, 0, 2]
  const auto r =
      compare(view(e, dtype::f32, {2, 3, 4}), view(a, dtype::f32, {2, 3, 4}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatch_count, 3u);
  ASSERT_EQ(r.mismatches.size(), 3u);
  EXPECT_EQ(r.mismatches[0].index, (shape_t{0, 1, 1}));
  EXPECT_EQ(r.mismatches[1].index, (shape_t{1, 0, 2}));
  EXPECT_EQ(r.mismatches[2].index, (shape_t{1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.mismatches[0].expected, static_cast<double>(e[5]));
  EXPECT_DOUBLE_EQ(r.mismatches[0].actual, static_cast<double>(a[5]));
  EXPECT_NEAR(r.mismatches[0].abs_err, 1e-3, 1e-6);
  EXPECT_EQ(r.worst_index, (shape_t{1, 2, 3}));
  EXPECT_NEAR(r.max_abs_err, 2e-3, 1e-5);
  EXPECT_TRUE(contains(r.message, "3 of 24 elements outside atol=0.0001 rtol=0.0001")) << r.message;
  EXPECT_TRUE(contains(r.message, "max abs err 0.002")) << r.message;
  EXPECT_TRUE(contains(r.message, "worst at [1, 2, 3]")) << r.message;
}

TEST(compare, keeps_only_the_first_few_mismatches_but_counts_all) {
  std::vector<double> e(100, 1.0), a(100, 1.0);
  for (std::size_t i = 10; i < 20; ++i) a[i] = 2.0;
  const auto r = compare(f64(e, {10, 10}), f64(a, {10, 10}), {1e-4, 1e-4}, 4);
  EXPECT_EQ(r.mismatch_count, 10u);
  ASSERT_EQ(r.mismatches.size(), 4u);
  EXPECT_EQ(r.mismatches[0].index, (shape_t{1, 0}));
  EXPECT_EQ(r.mismatches[3].index, (shape_t{1, 3}));
  EXPECT_TRUE(contains(r.message, "10 of 100 elements")) << r.message;
}

TEST(compare, worst_index_is_the_largest_excess_over_tolerance_not_the_largest_error) {
  // Element 0 has the larger absolute error but is inside its relative tolerance.
  const std::vector<double> e = {1000.0, 1.0};
  const std::vector<double> a = {1000.09, 1.001};
  const auto r = compare(f64(e), f64(a), {1e-4, 1e-4});
  EXPECT_EQ(r.mismatch_count, 1u);
  EXPECT_EQ(r.worst_index, (shape_t{1}));
  EXPECT_NEAR(r.max_abs_err, 0.09, 1e-9);
}

TEST(compare, error_statistics) {
  const std::vector<double> e = {1.0, 2.0, 4.0, 0.0};
  const std::vector<double> a = {1.1, 2.0, 4.0, 0.5};
  const auto r = compare(f64(e), f64(a), {1.0, 0.0});
  EXPECT_TRUE(r.passed);
  EXPECT_NEAR(r.max_abs_err, 0.5, 1e-12);
  EXPECT_NEAR(r.mean_abs_err, 0.15, 1e-12);
  EXPECT_NEAR(r.max_rel_err, 0.1, 1e-12);  // e == 0 is left out of relative error
  EXPECT_NEAR(r.mean_rel_err, 0.1 / 3, 1e-12);
  EXPECT_EQ(r.abs_err_count, 4u);
  EXPECT_EQ(r.rel_err_count, 3u);
  EXPECT_EQ(r.worst_index, (shape_t{3}));  // closest to its limit even when passing
  // The means are over finite pairs: a NaN is counted apart, not as an error of 0.
  const std::vector<double> with_nan = {1.1, nan, 4.0, 0.5};
  const auto n = compare(f64(e), f64(with_nan), {1.0, 0.0});
  EXPECT_EQ(n.abs_err_count, 3u);
  EXPECT_EQ(n.rel_err_count, 2u);
  EXPECT_NEAR(n.mean_abs_err, 0.6 / 3, 1e-12);
}

TEST(compare, nan_in_output_fails_and_is_counted) {
  const std::vector<double> e = {1.0, 2.0, 3.0, 4.0};
  const std::vector<double> a = {1.0, nan, 3.0, nan};
  const auto r = compare(f64(e), f64(a), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nan_count, 2u);
  EXPECT_EQ(r.inf_count, 0u);
  EXPECT_EQ(r.mismatch_count, 2u);
  EXPECT_EQ(r.max_abs_err, 0.0);  // only finite pairs count
  EXPECT_EQ(r.worst_index, (shape_t{1}));
  EXPECT_TRUE(r.message.starts_with("2 NaN in output")) << r.message;
}

TEST(compare, nan_matches_nan_in_the_same_place) {
  const std::vector<double> e = {1.0, nan, 3.0};
  EXPECT_TRUE(compare(f64(e), f64(e), {1e-4, 1e-4}).passed);
  const std::vector<double> finite_where_ref_is_nan = {1.0, 2.0, 3.0};
  const auto r = compare(f64(e), f64(finite_where_ref_is_nan), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatch_count, 1u);
  EXPECT_EQ(r.nan_count, 0u);  // the candidate has no NaN
  EXPECT_TRUE(contains(r.message, "1 finite where the reference is NaN or Inf (first at [1])"))
      << r.message;
}

TEST(compare, worst_index_prefers_a_finite_failure_and_nan_position_is_reported) {
  std::vector<double> e(12, 1.0), a(12, 1.0);
  a[2] = nan;  // [0, 2]
  a[7] = 1.5;  // [1, 3]
  a[9] = nan;
  const auto r = compare(f64(e, {3, 4}), f64(a, {3, 4}), {1e-4, 1e-4});
  EXPECT_EQ(r.nan_count, 2u);
  EXPECT_EQ(r.mismatch_count, 3u);
  EXPECT_EQ(r.worst_index, (shape_t{1, 3}));
  EXPECT_DOUBLE_EQ(r.max_abs_err, 0.5);
  EXPECT_EQ(r.message,
            "2 NaN in output (first at [0, 2]); 3 of 12 elements outside atol=0.0001 "
            "rtol=0.0001 (max abs err 0.5; worst at [1, 3]: expected 1, got 1.5)");
}

TEST(compare, inf_matches_only_the_same_signed_inf) {
  const std::vector<double> e = {inf, -inf, 1.0};
  EXPECT_TRUE(compare(f64(e), f64(e), {1e-4, 1e-4}).passed);
  const std::vector<double> flipped = {inf, inf, 1.0};
  const auto r = compare(f64(e), f64(flipped), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.inf_count, 1u);
  EXPECT_EQ(r.mismatch_count, 1u);
  EXPECT_EQ(r.worst_index, (shape_t{1}));
  const std::vector<double> overflow = {inf, -inf, inf};
  const auto r2 = compare(f64(e), f64(overflow), {1e-4, 1e-4});
  EXPECT_EQ(r2.inf_count, 1u);
  EXPECT_TRUE(contains(r2.message, "1 Inf in output")) << r2.message;
}

TEST(compare, shape_mismatch_fails_without_comparing_values) {
  const std::vector<float> e(8 * 64 * 128, 1.0f), a(8 * 64, 1.0f);
  const auto r =
      compare(view(e, dtype::f32, {8, 64, 128}), view(a, dtype::f32, {8, 64}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.shape_ok);
  EXPECT_TRUE(r.dtype_ok);
  EXPECT_EQ(r.mismatch_count, 0u);
  EXPECT_EQ(r.expected_shape, (shape_t{8, 64, 128}));
  EXPECT_EQ(r.actual_shape, (shape_t{8, 64}));
  EXPECT_EQ(r.message, "shape mismatch: expected [8, 64, 128], got [8, 64]");
}

TEST(compare, same_element_count_in_another_shape_is_still_a_shape_mismatch) {
  const std::vector<float> v(12, 1.0f);
  const auto r = compare(view(v, dtype::f32, {3, 4}), view(v, dtype::f32, {4, 3}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.message, "shape mismatch: expected [3, 4], got [4, 3]");
}

TEST(compare, dtype_mismatch_fails_without_comparing_values) {
  const std::vector<float> e(4, 1.0f);
  const std::vector<std::uint16_t> a(4, 0x3c00);  // 1.0 in float16: equal values, wrong type
  const auto r = compare(view(e, dtype::f32, {4}), view(a, dtype::f16, {4}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.shape_ok);
  EXPECT_FALSE(r.dtype_ok);
  EXPECT_EQ(r.expected_dtype, dtype::f32);
  EXPECT_EQ(r.actual_dtype, dtype::f16);
  EXPECT_EQ(r.message, "dtype mismatch: expected float32, got float16");
}

TEST(compare, constant_output_is_flagged) {
  const std::vector<double> e = {1.0, 2.0, 3.0, 4.0};
  const std::vector<double> never_written(4, nan);  // kjudge pre-fills outputs with NaN
  const auto r = compare(f64(e), f64(never_written), {1e-4, 1e-4});
  EXPECT_TRUE(r.constant_output);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nan_count, 4u);
  EXPECT_TRUE(contains(r.message, "every output element is nan")) << r.message;
  // A NaN with its sign bit set reads the same (it read "-nan").
  const std::vector<double> negative_nan(4, -nan);
  const auto n = compare(f64(e), f64(negative_nan), {1e-4, 1e-4});
  EXPECT_TRUE(contains(n.message, "every output element is nan;") ||
              n.message.ends_with("every output element is nan"))
      << n.message;

  const std::vector<double> zeros(4, 0.0);
  const auto z = compare(f64(zeros), f64(zeros), {1e-4, 1e-4});
  EXPECT_TRUE(z.passed);  // a constant output can be right; the flag is information
  EXPECT_TRUE(z.constant_output);

  const std::vector<double> varied = {1.0, 1.0, 1.0, 1.00001};
  EXPECT_FALSE(compare(f64(e), f64(varied), {1e-4, 1e-4}).constant_output);
  const std::vector<double> one = {5.0};
  EXPECT_FALSE(compare(f64(one), f64(one), {1e-4, 1e-4}).constant_output);
}

TEST(compare, the_reference_varies_beyond_rounding_or_not) {
  // Spread over [0, 1e-5]: far more than rtol (1e-4) times its largest magnitude, so a constant
  // 5e-6 passes by atol alone.
  const std::vector<double> small = {0.0, 2.5e-6, 7.5e-6, 1e-5};
  const auto r = compare(f64(small), f64(std::vector<double>(4, 5e-6)), {1e-4, 1e-4});
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.constant_output);
  EXPECT_TRUE(r.reference_varies);
  EXPECT_DOUBLE_EQ(r.reference_sum, 2e-5);
  EXPECT_DOUBLE_EQ(r.reference_abs_sum, 2e-5);
  // Sums of softmax rows: 1 within rounding, not beyond rtol.
  const std::vector<double> ones = {1.0, 1.0 - 6e-8, 1.0 + 1.2e-7, 1.0};
  EXPECT_FALSE(compare(f64(ones), f64(std::vector<double>(4, 1.0)), {1e-4, 1e-4}).reference_varies);
  // Zero but for rounding: however small its largest magnitude, a spread under atol / 100 is
  // not a variation.
  const std::vector<double> centred = {2.2e-8, -1.1e-8, 0.0, 5e-9};
  EXPECT_FALSE(
      compare(f64(centred), f64(std::vector<double>(4, 0.0)), {1e-4, 1e-4}).reference_varies);
  // Non-finite reference values are left out; a constant reference does not vary.
  const std::vector<double> with_nan = {2.0, nan, 2.0, 2.0};
  EXPECT_FALSE(compare(f64(with_nan), f64(with_nan), {1e-4, 1e-4}).reference_varies);
  EXPECT_DOUBLE_EQ(compare(f64(with_nan), f64(with_nan), {1e-4, 1e-4}).reference_sum, 6.0);
}

TEST(compare, actual_hash_is_fnv1a_of_the_values) {
  const std::vector<double> e = {1.0, 2.0};
  const std::vector<double> a = {1.0, 2.5};
  const auto r1 = compare(f64(e), f64(e), {1e-4, 1e-4});
  const auto r2 = compare(f64(e), f64(a), {1e-4, 1e-4});
  EXPECT_EQ(r1.actual_hash, kj::check::value_hash(f64(e)));
  EXPECT_NE(r1.actual_hash, r2.actual_hash);
  // FNV-1a over the bytes of each value, little-endian: "a" is one byte 0x61.
  const std::vector<std::uint8_t> letter = {0x61};
  EXPECT_EQ(kj::check::value_hash(view(letter, dtype::u8, {1})), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(kj::check::value_hash(host_tensor{dtype::f32, {0}, nullptr}), 0xcbf29ce484222325ULL);
  // A value's other encodings hash as it does: zeros of either sign, NaN payloads, bool bytes.
  const std::vector<float> zeros = {0.0f, -0.0f, 1.0f};
  const std::vector<float> plus_zeros = {0.0f, 0.0f, 1.0f};
  EXPECT_EQ(kj::check::value_hash(view(zeros, dtype::f32, {3})),
            kj::check::value_hash(view(plus_zeros, dtype::f32, {3})));
  const std::vector<std::uint32_t> nans = {0x7fc00000U, 0xffc00001U};
  const std::vector<std::uint32_t> quiet = {0x7fc00000U, 0x7fc00000U};
  EXPECT_EQ(kj::check::value_hash(view(nans, dtype::f32, {2})),
            kj::check::value_hash(view(quiet, dtype::f32, {2})));
  const std::vector<std::uint8_t> truths = {2, 0};
  const std::vector<std::uint8_t> ones = {1, 0};
  EXPECT_EQ(kj::check::value_hash(view(truths, dtype::boolean, {2})),
            kj::check::value_hash(view(ones, dtype::boolean, {2})));
  // Not across values or types of another width.
  const std::vector<float> other = {0.0f, 0.5f, 1.0f};
  EXPECT_NE(kj::check::value_hash(view(zeros, dtype::f32, {3})),
            kj::check::value_hash(view(other, dtype::f32, {3})));
}

TEST(compare, constant_output_is_judged_by_value_not_by_bits) {
  // x * 0.f keeps x's sign: zeros of both signs are still one constant.
  const std::vector<float> e = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> signed_zeros = {0.0f, -0.0f, 0.0f, -0.0f};
  const auto r =
      compare(view(e, dtype::f32, {4}), view(signed_zeros, dtype::f32, {4}), {1e-4, 1e-4});
  EXPECT_TRUE(r.constant_output);
  EXPECT_TRUE(contains(r.message, "every output element is 0")) << r.message;
  for (const dtype t : {dtype::f16, dtype::bf16}) {
    const std::vector<std::uint16_t> z = {0x0000, 0x8000, 0x0000};
    EXPECT_TRUE(kj::check::is_constant(view(z, t, {3}))) << kj::to_string(t);
    const std::vector<std::uint16_t> nan_payloads = {0x7fff, 0xffc1, 0x7fc1};
    EXPECT_TRUE(kj::check::is_constant(view(nan_payloads, t, {3}))) << kj::to_string(t);
    const std::vector<std::uint16_t> inf_and_nan = {0x7c00, 0x7f80, 0x7fff};
    EXPECT_FALSE(kj::check::is_constant(view(inf_and_nan, t, {3}))) << kj::to_string(t);
  }
  const std::vector<double> d = {-0.0, 0.0};
  EXPECT_TRUE(kj::check::is_constant(f64(d)));
  const std::vector<double> nan_and_number = {nan, 0.0};
  EXPECT_FALSE(kj::check::is_constant(f64(nan_and_number)));
  // bool bytes by their truth: 2 is true, as 1 is.
  const std::vector<std::uint8_t> truths = {2, 1, 255};
  EXPECT_TRUE(kj::check::is_constant(view(truths, dtype::boolean, {3})));
  const std::vector<std::uint8_t> bytes = {2, 1, 255};
  EXPECT_FALSE(kj::check::is_constant(view(bytes, dtype::u8, {3})));
}

TEST(compare, float16_outputs_use_their_decoded_values) {
  const auto tol = kj::check::default_tolerance(dtype::f16);
  const std::vector<std::uint16_t> e = {0x3c00, 0xc000};        // 1.0, -2.0
  const std::vector<std::uint16_t> one_ulp = {0x3c01, 0xc000};  // 1.0009765625
  const std::vector<std::uint16_t> off = {0x3c20, 0xc000};      // 1.03125
  EXPECT_TRUE(compare(view(e, dtype::f16, {2}), view(one_ulp, dtype::f16, {2}), tol).passed);
  const auto r = compare(view(e, dtype::f16, {2}), view(off, dtype::f16, {2}), tol);
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].actual, 1.03125);
  EXPECT_EQ(r.mismatches[0].expected, 1.0);
}

TEST(compare, bfloat16_outputs_use_their_decoded_values) {
  const auto tol = kj::check::default_tolerance(dtype::bf16);
  const std::vector<std::uint16_t> e = {0x3f80, 0x4040};        // 1.0, 3.0
  const std::vector<std::uint16_t> one_ulp = {0x3f81, 0x4040};  // 1.0078125
  const std::vector<std::uint16_t> off = {0x3f80, 0x4044};      // 3.0625
  EXPECT_TRUE(compare(view(e, dtype::bf16, {2}), view(one_ulp, dtype::bf16, {2}), tol).passed);
  const auto r = compare(view(e, dtype::bf16, {2}), view(off, dtype::bf16, {2}), tol);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst_index, (shape_t{1}));
  EXPECT_DOUBLE_EQ(r.max_abs_err, 0.0625);
}

TEST(compare, zero_dim_tensors) {
  const std::vector<float> e = {3.0f};
  const std::vector<float> a = {3.5f};
  const auto ok = compare(view(e, dtype::f32, {}), view(e, dtype::f32, {}), {1e-4, 1e-4});
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.numel, 1u);
  const auto r = compare(view(e, dtype::f32, {}), view(a, dtype::f32, {}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.worst_index.empty());
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_TRUE(r.mismatches[0].index.empty());
  EXPECT_TRUE(contains(r.message, "1 of 1 elements")) << r.message;
  EXPECT_TRUE(contains(r.message, "worst at []")) << r.message;
  // A scalar is not a 1-element vector.
  const auto s = compare(view(e, dtype::f32, {}), view(e, dtype::f32, {1}), {1e-4, 1e-4});
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.message, "shape mismatch: expected [], got [1]");
}

TEST(compare, empty_tensors_pass) {
  const host_tensor e{dtype::f32, {0, 16}, nullptr};
  EXPECT_EQ(e.numel(), 0u);
  const auto r = compare(e, e, {1e-4, 1e-4});
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.numel, 0u);
  EXPECT_TRUE(r.worst_index.empty());
}

TEST(compare, integer_outputs_are_exact_by_default) {
  const auto exact = kj::check::default_tolerance(dtype::i64);
  const std::vector<std::int64_t> e = {3, -7, 1'000'000'007};
  const std::vector<std::int64_t> off_by_one = {3, -6, 1'000'000'007};
  EXPECT_TRUE(compare(view(e, dtype::i64, {3}), view(e, dtype::i64, {3}), exact).passed);
  const auto r = compare(view(e, dtype::i64, {3}), view(off_by_one, dtype::i64, {3}), exact);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst_index, (shape_t{1}));
  EXPECT_TRUE(contains(r.message, "int64 compares exactly")) << r.message;
  EXPECT_TRUE(contains(r.message, "expected -7, got -6")) << r.message;
  // No tolerance loosens integers (a problem's KJUDGE_RTOL meant for its float outputs must not
  // pass an off-by-one index).
  const auto loose =
      compare(view(e, dtype::i64, {3}), view(off_by_one, dtype::i64, {3}), {1.0, 0.5});
  EXPECT_FALSE(loose.passed);
  EXPECT_EQ(loose.tol.atol, 0.0);
  EXPECT_EQ(loose.tol.rtol, 0.0);

  // Beyond 2^53 doubles round neighbours together; the comparison must not.
  const std::int64_t big = (std::int64_t{1} << 60) + 3;
  const std::vector<std::int64_t> be = {big, big * 2 / 2};
  const std::vector<std::int64_t> ba = {big + 1, big};
  const auto x = compare(view(be, dtype::i64, {2}), view(ba, dtype::i64, {2}), exact);
  EXPECT_FALSE(x.passed);
  EXPECT_EQ(x.mismatch_count, 1u);
  EXPECT_EQ(x.max_abs_err, 1.0);
  EXPECT_EQ(x.worst_index, (shape_t{0}));
  EXPECT_TRUE(contains(x.message, "expected 1152921504606846979, got 1152921504606846980"))
      << x.message;
  // The mismatch record keeps the exact values as text (its doubles cannot tell them apart).
  ASSERT_EQ(x.mismatches.size(), 1u);
  EXPECT_EQ(x.mismatches[0].expected_text, "1152921504606846979");
  EXPECT_EQ(x.mismatches[0].actual_text, "1152921504606846980");
  EXPECT_EQ(x.mismatches[0].expected, x.mismatches[0].actual);  // what the text is for

  // An empty integer output has no worst element.
  const host_tensor none{dtype::i32, {0, 16}, nullptr};
  const auto empty = compare(none, none, exact);
  EXPECT_TRUE(empty.passed);
  EXPECT_TRUE(empty.worst_index.empty());

  const std::vector<std::uint8_t> mask = {1, 0, 1};
  const std::vector<std::uint8_t> wrong_mask = {1, 1, 1};
  const auto b = compare(view(mask, dtype::boolean, {3}), view(wrong_mask, dtype::boolean, {3}),
                         kj::check::default_tolerance(dtype::boolean));
  EXPECT_FALSE(b.passed);
  EXPECT_EQ(b.mismatch_count, 1u);
}

TEST(compare, default_tolerances_follow_kernelbench) {
  for (const dtype t : {dtype::f32, dtype::f64}) {
    EXPECT_EQ(kj::check::default_tolerance(t).atol, 1e-4);
    EXPECT_EQ(kj::check::default_tolerance(t).rtol, 1e-4);
  }
  for (const dtype t : {dtype::f16, dtype::bf16}) {
    EXPECT_EQ(kj::check::default_tolerance(t).atol, 1e-2);
    EXPECT_EQ(kj::check::default_tolerance(t).rtol, 1e-2);
  }
  for (const dtype t : {dtype::i8, dtype::u8, dtype::i16, dtype::i32, dtype::i64, dtype::boolean}) {
    EXPECT_EQ(kj::check::default_tolerance(t).atol, 0.0);
    EXPECT_EQ(kj::check::default_tolerance(t).rtol, 0.0);
  }
}

}  // namespace

namespace {

/** FNV-1a over `bytes` little-endian bytes of v, from h. */
std::uint64_t fnv(std::uint64_t h, std::uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k, v >>= 8) {
    h ^= v & 0xffU;
    h *= 0x100000001b3ULL;
  }
  return h;
}

constexpr std::size_t run = std::size_t{1} << 20;  // compare.cpp's runs

}  // namespace

TEST(compare, a_large_output_is_judged_as_one_whole_across_its_runs) {
  // Three runs and a part: compared run by run on several threads, then put together in order.
  const std::size_t n = 3 * run + 12345;
  std::vector<float> e(n), a(n);
  for (std::size_t i = 0; i < n; ++i) e[i] = a[i] = static_cast<float>(i % 1000) * 0.001f;
  // Out of tolerance: two in the last run, three in the first, one in the second; the largest
  // in the second run; a NaN in the third, where the reference is finite.
  for (const std::size_t i : {n - 2, n - 1, std::size_t{5}, std::size_t{6}, std::size_t{7}})
    a[i] += 0.5f;
  a[run + 3] += 2.0f;
  a[2 * run + 9] = std::numeric_limits<float>::quiet_NaN();
  const auto r = compare(view(e, dtype::f32, {static_cast<std::int64_t>(n)}),
                         view(a, dtype::f32, {static_cast<std::int64_t>(n)}), {1e-4, 1e-4});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatch_count, 7U);
  EXPECT_EQ(r.nan_count, 1U);
  ASSERT_EQ(r.mismatches.size(), 5U);  // the first five, in index order
  const std::vector<std::int64_t> first = {5, 6, 7, static_cast<std::int64_t>(run + 3),
                                           static_cast<std::int64_t>(2 * run + 9)};
  for (std::size_t k = 0; k < first.size(); ++k) EXPECT_EQ(r.mismatches[k].index[0], first[k]);
  EXPECT_EQ(r.worst_index, shape_t{static_cast<std::int64_t>(run + 3)});
  EXPECT_NEAR(r.max_abs_err, 2.0, 1e-6);
  EXPECT_EQ(r.abs_err_count, n - 1);
  EXPECT_TRUE(contains(r.message, "1 NaN in output (first at [" + std::to_string(2 * run + 9)));
  // The reference's sum over every run, as one sum would give it to rounding.
  double sum = 0;
  for (const float v : e) sum += v;
  EXPECT_NEAR(r.reference_sum, sum, 1e-9 * sum);
  // A constant output is one across runs; one element off in the last run is not.
  std::vector<float> c(n, 0.25f);
  const auto whole = view(c, dtype::f32, {static_cast<std::int64_t>(n)});
  EXPECT_TRUE(kj::check::is_constant(whole));
  c[n - 1] = 0.5f;
  EXPECT_FALSE(kj::check::is_constant(whole));
}

TEST(compare, a_large_integer_output_keeps_its_first_mismatches_and_worst_across_runs) {
  const std::size_t n = 2 * run + 7;
  std::vector<std::int64_t> e(n, 3), a(n, 3);
  a[run + 1] = 10;  // the largest difference, in the second run
  a[2] = 4;
  a[n - 1] = 2;
  const auto r = compare(view(e, dtype::i64, {static_cast<std::int64_t>(n)}),
                         view(a, dtype::i64, {static_cast<std::int64_t>(n)}), {});
  EXPECT_EQ(r.mismatch_count, 3U);
  ASSERT_EQ(r.mismatches.size(), 3U);
  EXPECT_EQ(r.mismatches[0].index[0], 2);
  EXPECT_EQ(r.mismatches[1].actual_text, "10");
  EXPECT_EQ(r.mismatches[2].index[0], static_cast<std::int64_t>(n - 1));
  EXPECT_EQ(r.worst_index, shape_t{static_cast<std::int64_t>(run + 1)});
  EXPECT_DOUBLE_EQ(r.max_abs_err, 7.0);
}

TEST(compare, a_large_outputs_hash_is_fnv1a_over_its_runs_hashes) {
  // Up to 2^20 elements, FNV-1a over the values; beyond, FNV-1a over each run's, in order.
  const std::size_t n = 2 * run + 3;
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7);
  constexpr std::uint64_t basis = 0xcbf29ce484222325ULL;
  std::uint64_t expected = basis;
  for (std::size_t begin = 0; begin < n; begin += run) {
    std::uint64_t h = basis;
    for (std::size_t i = begin; i < std::min(n, begin + run); ++i) h = fnv(h, v[i], 1);
    expected = fnv(expected, h, 8);
  }
  EXPECT_EQ(kj::check::value_hash(view(v, dtype::u8, {static_cast<std::int64_t>(n)})), expected);
  std::uint64_t one_run = basis;
  for (std::size_t i = 0; i < run; ++i) one_run = fnv(one_run, v[i], 1);
  EXPECT_EQ(kj::check::value_hash(view(v, dtype::u8, {static_cast<std::int64_t>(run)})), one_run);
}

TEST(compare, an_expansion_of_another_shape_is_read_from_the_elements_it_reaches) {
  // A candidate output kept as the elements its strides reach (host_tensor::reached): only its
  // shape is compared; constant and hash come from those elements, the hash with the shape.
  const std::vector<float> e(6, 0.5F);
  const std::vector<float> one = {0.25F};
  auto a = view(one, dtype::f32, {1000, 1000});
  a.reached = 1;
  const auto r = compare(view(e, dtype::f32, {2, 3}), a, {});
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.shape_ok);
  EXPECT_NE(r.message.find("shape mismatch"), std::string::npos) << r.message;
  EXPECT_TRUE(r.constant_output);
  auto b = view(one, dtype::f32, {1000, 999});
  b.reached = 1;
  EXPECT_NE(compare(view(e, dtype::f32, {2, 3}), b, {}).actual_hash, r.actual_hash);
  // Two reached elements that differ: not constant; the same shape, another dtype: allowed.
  const std::vector<double> two = {1.0, 2.0};
  auto c = view(two, dtype::f64, {2, 3});
  c.reached = 2;
  const auto d = compare(view(e, dtype::f32, {2, 3}), c, {});
  EXPECT_FALSE(d.dtype_ok);
  EXPECT_FALSE(d.constant_output);
}
