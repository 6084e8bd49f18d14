#include <kjudge/profile/format.hpp>

#include <cmath>

#include <fmt/format.h>

namespace kj::profile {

namespace {

/** `v` with a decimal SI prefix; `decimals` < 0: three or four significant digits. */
std::string with_prefix(double v, const char* unit, int decimals = -1) {
  struct prefix {
    double scale;
    const char* name;
  };
  static constexpr prefix prefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& p : prefixes)
    if (std::fabs(v) >= p.scale) {
      const double scaled = v / p.scale;
      // 3.35, 13.6, 927.6: three or four significant digits.
      const int places = decimals >= 0 ? decimals : (std::fabs(scaled) >= 10 ? 1 : 2);
      return fmt::format("{:.{}f} {}{}", scaled, places, p.name, unit);
    }
  return fmt::format("{:.3g} {}", v, unit);
}

}  // namespace

std::string format_bytes_per_s(double bytes_per_s) {
  return with_prefix(bytes_per_s, "B/s");
}

std::string format_flop_per_s(double flop_per_s) {
  return with_prefix(flop_per_s, "FLOP/s");
}

std::string format_bytes(double bytes) {
  return with_prefix(bytes, "B", 2);
}

std::string format_flop(double flop) {
  return with_prefix(flop, "FLOP");
}

std::string format_pct(double pct) {
  return fmt::format("{:.1f}%", pct);
}

}  // namespace kj::profile
