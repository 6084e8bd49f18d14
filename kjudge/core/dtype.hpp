#pragma once
/** @file Element types shared by the bridge, the comparison code and the native ABI. The numeric
 *  values equal the kj_dtype values of include/kjudge/candidate.h. */

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kj {

enum class dtype : std::int32_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  f64 = 3,
  i8 = 4,
  u8 = 5,
  i16 = 6,
  i32 = 7,
  i64 = 8,
  boolean = 9,
};

/** Name as torch spells it after "torch." (float32, bfloat16, int64, bool, ...). */
[[nodiscard]] std::string_view to_string(dtype t) noexcept;
/** Inverse of to_string; also accepts "torch.float32" and aliases (float, half, long, int). */
[[nodiscard]] std::optional<dtype> dtype_from_string(std::string_view name) noexcept;
[[nodiscard]] std::size_t element_size(dtype t) noexcept;
[[nodiscard]] bool is_floating(dtype t) noexcept;

/** Reads element i of a contiguous host array of type t as double (f16/bf16 decoded exactly;
 *  int64 values beyond 2^53 rounded: compare those with load_as_int64). */
[[nodiscard]] double load_as_double(const void* data, dtype t, std::size_t i) noexcept;

/** Reads element i of a contiguous host array of an integer or bool type t exactly (0 for a
 *  floating-point t). */
[[nodiscard]] std::int64_t load_as_int64(const void* data, dtype t, std::size_t i) noexcept;

}  // namespace kj
