#include <kjudge/core/jitter.hpp>

#include <algorithm>
#include <limits>

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
  // A uniform draw among the integers within 15% of n, from (seed, n) alone, so the value does
  // not depend on the order in which a problem asks for its sizes: n - d .. n + d with
  // d = floor(0.15 n), in integers (rounding n (1 + f) could land 25% off at n = 4).
  const std::uint64_t h = mix64(m_seed ^ mix64(static_cast<std::uint64_t>(n)));
  const std::int64_t reach = n <= std::numeric_limits<std::int64_t>::max() / 2
                                 ? max_percent * (n / 100) + (max_percent * (n % 100)) / 100
                                 : 0;
  const std::int64_t d = m_jitter ? reach : 0;
  const auto span = 2u * static_cast<std::uint64_t>(d) + 1u;  // d < n: n - d >= 1
  const std::int64_t drawn = n - d + static_cast<std::int64_t>(h % span);
  // Only sizes that jitter are scaled: one below 7 never moves in a trial (3 input channels,
  // 4 heads), and a problem can build on it being fixed, as it cannot on a size that jitters.
  // Nor one whose product would not fit in 64 bits (no tensor has such a size; the product
  // overflowed before).
  const bool scaled = reach > 0 && drawn <= std::numeric_limits<std::int64_t>::max() / m_scale;
  const std::int64_t value = scaled ? drawn * m_scale : drawn;
  m_draws.emplace(n, value);
  return value;
}

}  // namespace kj
