#pragma once
/** @file Output comparison: shape, dtype, non-finite values and values under dtype-aware
 *  tolerances (torch.allclose semantics: |actual - expected| <= atol + rtol * |expected|), with the
 *  precision statistics a kernel author needs to see how close a wrong answer came. Works on host
 *  copies of the tensors, so it is testable without a GPU or Python. */

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/dtype.hpp>

namespace kj::check {

struct tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

/** KernelBench's defaults: 1e-4 for fp32/fp64, 1e-2 for fp16/bf16, exact (0, 0) for integer and
 *  bool outputs. */
[[nodiscard]] tolerance default_tolerance(dtype t) noexcept;

/** A contiguous row-major host array. Does not own `data`. */
struct host_tensor {
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;  ///< empty for a 0-dim (scalar) tensor
  const void* data = nullptr;
  /** Nonzero where `data` holds only the elements an expanded tensor's strides reach (this
   *  many, from its first), not the tensor written out: a candidate output whose shape or dtype
   *  is not the reference's, which kjudge does not write out (python/bridge.cpp, kept_views).
   *  compare() takes it as `actual` only with a shape or dtype other than `expected`'s, and
   *  reads its values (hash, constant) from those elements. */
  std::size_t reached = 0;
  [[nodiscard]] std::size_t numel() const noexcept;
};

struct mismatch {
  std::vector<std::int64_t> index;  ///< multi-dimensional index into the output
  double expected = 0;
  double actual = 0;
  double abs_err = 0;
  /** Integer and bool outputs: the two values in exact decimal (int64 beyond 2^53 included,
   *  which the doubles above round); empty for floating outputs. */
  std::string expected_text;
  std::string actual_text;
};

struct output_comparison {
  bool passed = false;
  bool shape_ok = false;
  bool dtype_ok = false;
  std::vector<std::int64_t> expected_shape, actual_shape;
  dtype expected_dtype = dtype::f32, actual_dtype = dtype::f32;
  tolerance tol;
  std::size_t numel = 0;
  std::size_t nan_count = 0;  ///< NaN in the candidate where the reference is not NaN
  std::size_t inf_count = 0;  ///< +-Inf in the candidate where the reference is not the same Inf
  std::size_t mismatch_count = 0;  ///< elements outside tolerance (non-finite ones included)
  double max_abs_err = 0;          ///< over elements where both sides are finite
  double mean_abs_err = 0;
  /** |a - e| / |e| over elements with |e| > 0 (finite on both sides); elements with e == 0 count
   *  only toward the absolute error. */
  double max_rel_err = 0;
  double mean_rel_err = 0;
  std::size_t abs_err_count = 0;          ///< elements mean_abs_err is over (both sides finite)
  std::size_t rel_err_count = 0;          ///< elements mean_rel_err is over (those with e != 0 too)
  std::vector<std::int64_t> worst_index;  ///< index of the largest |a - e| (excess over tolerance)
  std::vector<mismatch> mismatches;       ///< the first few out-of-tolerance elements, in order
  bool constant_output = false;   ///< every element of the candidate's output equal (numel > 1)
  std::uint64_t actual_hash = 0;  ///< value_hash of the candidate's output, to spot repeats
  /** Floating outputs: the reference's finite values span more than rtol times their largest
   *  magnitude and more than atol / 100 (more than rounding moves them), so an output that does
   *  not vary and passes does so by the absolute tolerance. */
  bool reference_varies = false;
  double reference_sum = 0;      ///< sum of the reference's finite values (floating outputs)
  double reference_abs_sum = 0;  ///< sum of their magnitudes
  std::string message;           ///< one line: why it failed, or empty
};

/** Compares the candidate's output with the reference's. Reference NaN/Inf at a position count as
 *  matching when the candidate has the same non-finite value there (torch's equal_nan=True).
 *  Integer and bool outputs compare exactly (as int64, not through double), whatever `tol` says;
 *  the result's `tol` is then {0, 0}. */
[[nodiscard]] output_comparison compare(const host_tensor& expected, const host_tensor& actual,
                                        tolerance tol, std::size_t max_mismatches = 5);

/** "shape mismatch: expected [..], got [..]; dtype mismatch: expected .., got .." for what
 *  differs (dtypes by torch's names, which may name one kjudge does not compare); empty when
 *  neither does. */
[[nodiscard]] std::string layout_mismatch(const std::vector<std::int64_t>& expected_shape,
                                          const std::vector<std::int64_t>& actual_shape,
                                          std::string_view expected_dtype,
                                          std::string_view actual_dtype);

/** Every element has the same value (and there are at least two): floating zeros of either sign
 *  alike, every NaN alike, bool bytes by their truth. */
[[nodiscard]] bool is_constant(const host_tensor& t) noexcept;

/** FNV-1a 64-bit over the elements' values, each as bytes of its own width and canonical as in
 *  is_constant (so +0 and -0, NaN payloads, and bool bytes 1 and 2 hash alike). */
[[nodiscard]] std::uint64_t value_hash(const host_tensor& t) noexcept;

}  // namespace kj::check
