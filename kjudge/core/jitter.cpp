#include <kjudge/core/jitter.hpp>

#include <algorithm>
#include <cmath>

namespace kj {

std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

jitter_table::jitter_table(std::uint64_t seed, std::int64_t scale, bool jitter) noexcept
    : m_seed(seed), m_scale(std::max<std::int64_t>(1, scale)), m_jitter(jitter) {}

std::int64_t jitter_table::jitter_int(std::int64_t n) {
  if (n <= 0) return n;
  if (auto it = m_draws.find(n); it != m_draws.end()) return it->second;
  // A uniform draw in [-max_fraction, +max_fraction] from (seed, n) alone, so the value does not
  // depend on the order in which a problem asks for its sizes.
  const std::uint64_t h = mix64(m_seed ^ mix64(static_cast<std::uint64_t>(n)));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  const double f = m_jitter ? (2.0 * u - 1.0) * max_fraction : 0.0;
  const auto drawn = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::llround(static_cast<double>(n) * (1.0 + f))));
  const std::int64_t value = drawn * m_scale;
  m_draws.emplace(n, value);
  return value;
}

}  // namespace kj
