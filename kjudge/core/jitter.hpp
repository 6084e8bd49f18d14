#pragma once
/** @file PopcornBench's shape jitter (`popcorn_pri.jitter_int(n)`), one table per trial.
 *  A trial's seed decides every draw; the same nominal n gives the same value for the whole trial
 *  (memoised), so related dimensions agree and the problem's own asserts hold. Draws lie within
 *  +-15% of n (at least 1); a stress trial then multiplies each drawn value by its scale (sizes
 *  below 7, which never jitter, stay as they are). */

#include <cstdint>
#include <map>

namespace kj {

class jitter_table {
 public:
  /** `scale` multiplies every size that jitters, 7 and above (1 for nominal trials, e.g. 4 for
   *  stress shapes). With `jitter` false every such size is its nominal value times `scale`. */
  explicit jitter_table(std::uint64_t seed = 0, std::int64_t scale = 1,
                        bool jitter = true) noexcept;

  /** The jittered value for nominal size n (n <= 0 is returned unchanged, unscaled). */
  [[nodiscard]] std::int64_t jitter_int(std::int64_t n);

  /** Fixes the value of nominal size n for this table (a draw made while the models were built,
   *  which every trial must repeat): later draws of n return `value`, unscaled. */
  void pin(std::int64_t n, std::int64_t value) { m_draws.insert_or_assign(n, value); }

  /** Every draw so far: nominal -> value. */
  [[nodiscard]] const std::map<std::int64_t, std::int64_t>& draws() const noexcept {
    return m_draws;
  }
  [[nodiscard]] std::uint64_t seed() const noexcept { return m_seed; }
  [[nodiscard]] std::int64_t scale() const noexcept { return m_scale; }

  /** Largest deviation from nominal before scaling, in percent of n (rounded down). */
  static constexpr std::int64_t max_percent = 15;

 private:
  std::uint64_t m_seed;
  std::int64_t m_scale;
  bool m_jitter;
  std::map<std::int64_t, std::int64_t> m_draws;
};

/** SplitMix64 finaliser: a well-mixed 64-bit hash of x (seeds, derived seeds). */
[[nodiscard]] std::uint64_t mix64(std::uint64_t x) noexcept;

}  // namespace kj
