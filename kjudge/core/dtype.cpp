#include <kjudge/core/dtype.hpp>

#include <bit>
#include <cmath>
#include <cstring>

namespace kj {

namespace {

template <class T>
T load(const void* data, std::size_t i) noexcept {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

double half_to_double(std::uint16_t h) noexcept {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);  // subnormal: mant * 2^-24
  } else if (exp == 31) {
    v = mant ? std::nan("") : HUGE_VAL;
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

double bf16_to_double(std::uint16_t b) noexcept {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  return static_cast<double>(std::bit_cast<float>(bits));
}

}  // namespace

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
      return "float32";
    case dtype::f16:
      return "float16";
    case dtype::bf16:
      return "bfloat16";
    case dtype::f64:
      return "float64";
    case dtype::i8:
      return "int8";
    case dtype::u8:
      return "uint8";
    case dtype::i16:
      return "int16";
    case dtype::i32:
      return "int32";
    case dtype::i64:
      return "int64";
    case dtype::boolean:
      return "bool";
  }
  return "unknown";
}

std::optional<dtype> dtype_from_string(std::string_view name) noexcept {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  struct entry {
    std::string_view name;
    dtype type;
  };
  static constexpr entry table[] = {
      {"float32", dtype::f32}, {"float", dtype::f32},     {"float16", dtype::f16},
      {"half", dtype::f16},    {"bfloat16", dtype::bf16}, {"float64", dtype::f64},
      {"double", dtype::f64},  {"int8", dtype::i8},       {"uint8", dtype::u8},
      {"int16", dtype::i16},   {"short", dtype::i16},     {"int32", dtype::i32},
      {"int", dtype::i32},     {"int64", dtype::i64},     {"long", dtype::i64},
      {"bool", dtype::boolean}};
  for (const auto& e : table)
    if (e.name == name) return e.type;
  return std::nullopt;
}

std::size_t element_size(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
      return 8;
    case dtype::f32:
    case dtype::i32:
      return 4;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16:
      return 2;
    case dtype::i8:
    case dtype::u8:
    case dtype::boolean:
      return 1;
  }
  return 0;
}

bool is_floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 || t == dtype::f64;
}

std::int64_t load_as_int64(const void* data, dtype t, std::size_t i) noexcept {
  switch (t) {
    case dtype::i8:
      return load<std::int8_t>(data, i);
    case dtype::u8:
      return load<std::uint8_t>(data, i);
    case dtype::i16:
      return load<std::int16_t>(data, i);
    case dtype::i32:
      return load<std::int32_t>(data, i);
    case dtype::i64:
      return load<std::int64_t>(data, i);
    case dtype::boolean:
      return load<std::uint8_t>(data, i) ? 1 : 0;
    case dtype::f32:
    case dtype::f64:
    case dtype::f16:
    case dtype::bf16:
      return 0;
  }
  return 0;
}

double load_as_double(const void* data, dtype t, std::size_t i) noexcept {
  switch (t) {
    case dtype::f32:
      return load<float>(data, i);
    case dtype::f64:
      return load<double>(data, i);
    case dtype::f16:
      return half_to_double(load<std::uint16_t>(data, i));
    case dtype::bf16:
      return bf16_to_double(load<std::uint16_t>(data, i));
    case dtype::i8:
      return load<std::int8_t>(data, i);
    case dtype::u8:
      return load<std::uint8_t>(data, i);
    case dtype::i16:
      return load<std::int16_t>(data, i);
    case dtype::i32:
      return load<std::int32_t>(data, i);
    case dtype::i64:
      return static_cast<double>(load<std::int64_t>(data, i));
    case dtype::boolean:
      return load<std::uint8_t>(data, i) ? 1.0 : 0.0;
  }
  return 0.0;
}

}  // namespace kj
