#include <kjudge/core/dtype.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace {

using kj::dtype;

constexpr dtype all_types[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i8,
                               dtype::u8,  dtype::i16, dtype::i32,  dtype::i64, dtype::boolean};

TEST(dtype, names_round_trip_through_parsing) {
  for (const dtype t : all_types) {
    const auto name = kj::to_string(t);
    EXPECT_EQ(kj::dtype_from_string(name), t) << name;
    EXPECT_EQ(kj::dtype_from_string("torch." + std::string(name)), t) << name;
  }
  EXPECT_EQ(kj::to_string(dtype::bf16), "bfloat16");
  EXPECT_EQ(kj::to_string(dtype::boolean), "bool");
}

TEST(dtype, parses_torch_aliases_and_rejects_unknown_names) {
  EXPECT_EQ(kj::dtype_from_string("float"), dtype::f32);
  EXPECT_EQ(kj::dtype_from_string("half"), dtype::f16);
  EXPECT_EQ(kj::dtype_from_string("double"), dtype::f64);
  EXPECT_EQ(kj::dtype_from_string("long"), dtype::i64);
  EXPECT_EQ(kj::dtype_from_string("int"), dtype::i32);
  EXPECT_EQ(kj::dtype_from_string("torch.half"), dtype::f16);
  EXPECT_FALSE(kj::dtype_from_string("complex64").has_value());
  EXPECT_FALSE(kj::dtype_from_string("").has_value());
  EXPECT_FALSE(kj::dtype_from_string("Float32").has_value());
}

TEST(dtype, element_sizes_and_floating_kinds) {
  EXPECT_EQ(kj::element_size(dtype::f32), 4u);
  EXPECT_EQ(kj::element_size(dtype::f16), 2u);
  EXPECT_EQ(kj::element_size(dtype::bf16), 2u);
  EXPECT_EQ(kj::element_size(dtype::f64), 8u);
  EXPECT_EQ(kj::element_size(dtype::i8), 1u);
  EXPECT_EQ(kj::element_size(dtype::u8), 1u);
  EXPECT_EQ(kj::element_size(dtype::i16), 2u);
  EXPECT_EQ(kj::element_size(dtype::i32), 4u);
  EXPECT_EQ(kj::element_size(dtype::i64), 8u);
  EXPECT_EQ(kj::element_size(dtype::boolean), 1u);
  for (const dtype t : all_types) {
    const bool floating = t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 || t == dtype::f64;
    EXPECT_EQ(kj::is_floating(t), floating) << kj::to_string(t);
  }
}

TEST(dtype, loads_wide_types_at_an_element_offset) {
  const float f[] = {1.5f, -2.25f, 3.0e-38f};
  EXPECT_EQ(kj::load_as_double(f, dtype::f32, 1), -2.25);
  EXPECT_EQ(kj::load_as_double(f, dtype::f32, 2), static_cast<double>(3.0e-38f));
  const double d[] = {0.1, 1e300};
  EXPECT_EQ(kj::load_as_double(d, dtype::f64, 0), 0.1);
  EXPECT_EQ(kj::load_as_double(d, dtype::f64, 1), 1e300);
}

TEST(dtype, loads_integers_with_their_sign) {
  const std::int8_t i8[] = {0, -128, 127};
  EXPECT_EQ(kj::load_as_double(i8, dtype::i8, 1), -128.0);
  const std::uint8_t u8[] = {0, 255};
  EXPECT_EQ(kj::load_as_double(u8, dtype::u8, 1), 255.0);
  const std::int16_t i16[] = {1, -32768};
  EXPECT_EQ(kj::load_as_double(i16, dtype::i16, 1), -32768.0);
  const std::int32_t i32[] = {7, -2147483647 - 1};
  EXPECT_EQ(kj::load_as_double(i32, dtype::i32, 1), -2147483648.0);
  const std::int64_t i64[] = {1, -(std::int64_t{1} << 40)};
  EXPECT_EQ(kj::load_as_double(i64, dtype::i64, 1), -1099511627776.0);
  const std::uint8_t b[] = {0, 1, 7};
  EXPECT_EQ(kj::load_as_double(b, dtype::boolean, 0), 0.0);
  EXPECT_EQ(kj::load_as_double(b, dtype::boolean, 1), 1.0);
  EXPECT_EQ(kj::load_as_double(b, dtype::boolean, 2), 1.0);  // any non-zero byte is true
}

double half(std::uint16_t bits) {
  return kj::load_as_double(&bits, dtype::f16, 0);
}
double bf16(std::uint16_t bits) {
  return kj::load_as_double(&bits, dtype::bf16, 0);
}

TEST(dtype, decodes_float16_exactly) {
  EXPECT_EQ(half(0x3c00), 1.0);
  EXPECT_EQ(half(0xc000), -2.0);
  EXPECT_EQ(half(0x3555), 0.333251953125);           // nearest half to 1/3
  EXPECT_EQ(half(0x7bff), 65504.0);                  // largest finite
  EXPECT_EQ(half(0x0400), std::ldexp(1.0, -14));     // smallest normal
  EXPECT_EQ(half(0x0001), std::ldexp(1.0, -24));     // smallest subnormal
  EXPECT_EQ(half(0x03ff), std::ldexp(1023.0, -24));  // largest subnormal
  EXPECT_EQ(half(0x0000), 0.0);
  EXPECT_EQ(half(0x8000), 0.0);
  EXPECT_TRUE(std::signbit(half(0x8000)));
  EXPECT_EQ(half(0x7c00), std::numeric_limits<double>::infinity());
  EXPECT_EQ(half(0xfc00), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(half(0x7e00)));
  EXPECT_TRUE(std::isnan(half(0x7c01)));
  const std::uint16_t pair[] = {0x3c00, 0x4500};
  EXPECT_EQ(kj::load_as_double(pair, dtype::f16, 1), 5.0);
}

TEST(dtype, decodes_bfloat16_exactly) {
  EXPECT_EQ(bf16(0x3f80), 1.0);
  EXPECT_EQ(bf16(0xc040), -3.0);
  EXPECT_EQ(bf16(0x4049), 3.140625);
  EXPECT_EQ(bf16(0x7f7f), 0x1.fep127);             // largest finite
  EXPECT_EQ(bf16(0x0080), std::ldexp(1.0, -126));  // smallest normal
  EXPECT_EQ(bf16(0x0001), std::ldexp(1.0, -133));  // smallest subnormal
  EXPECT_TRUE(std::signbit(bf16(0x8000)));
  EXPECT_EQ(bf16(0x7f80), std::numeric_limits<double>::infinity());
  EXPECT_EQ(bf16(0xff80), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(bf16(0x7fc0)));
  const std::uint16_t pair[] = {0x3f80, 0x40a0};
  EXPECT_EQ(kj::load_as_double(pair, dtype::bf16, 1), 5.0);
}

}  // namespace
