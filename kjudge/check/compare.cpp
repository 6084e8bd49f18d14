#include <kjudge/check/compare.hpp>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>

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

namespace {

/** The elements are scanned in runs of this many, each on its own, and the runs' results
 *  combined in order: so a large output's comparison spreads over the machine's cores (a
 *  6.4 GB output, as KernelBench's level-1 problems return, took about 19 s on one), and the
 *  result does not depend on how many there are. */
constexpr std::size_t run_elements = std::size_t{1} << 20;

std::size_t runs_of(std::size_t n) noexcept {
  return (n + run_elements - 1) / run_elements;
}

/** The CPUs this process may run on (its affinity, which a container's or taskset's limit
 *  sets), at least 1. */
std::size_t usable_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

/** fn(r, begin, end) for every run r of n elements, on up to 16 threads (the machine's cores)
 *  where there are several runs; in this thread alone where threads cannot be had. fn must not
 *  throw. */
template <class F>
void for_each_run(std::size_t n, const F& fn) noexcept {
  const std::size_t runs = runs_of(n);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t r; (r = next.fetch_add(1, std::memory_order_relaxed)) < runs;)
      fn(r, r * run_elements, std::min(n, (r + 1) * run_elements));
  };
  const std::size_t threads = std::min<std::size_t>({runs, usable_cpus(), 16});
  std::vector<std::jthread> pool;
  try {
    pool.reserve(threads > 0 ? threads - 1 : 0);
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {
    // fewer threads: the ones started and this one share the runs
  }
  work();
}

/** FNV-1a state h after the low `width` bytes of v, little-endian, a byte at a time. */
std::uint64_t fnv1a_bytes(std::uint64_t h, std::uint64_t v, std::size_t width) noexcept {
  for (std::size_t k = 0; k < width; ++k, v >>= 8) {
    h ^= v & 0xffU;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/** FNV-1a over elements [begin, end), each as bytes of its own width, from state h. */
std::uint64_t fnv1a(const host_tensor& t, std::size_t begin, std::size_t end,
                    std::uint64_t h) noexcept {
  const std::size_t width = element_size(t.type);
  for (std::size_t i = begin; i < end; ++i)
    h = fnv1a_bytes(h, canonical_bits(t.data, t.type, i), width);
  return h;
}

constexpr std::uint64_t fnv_offset_basis = 0xcbf29ce484222325ULL;

}  // namespace

bool is_constant(const host_tensor& t) noexcept {
  const std::size_t n = t.numel();
  if (n < 2 || t.data == nullptr) return false;
  const std::uint64_t first = canonical_bits(t.data, t.type, 0);
  std::atomic<bool> differs{false};
  for_each_run(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && !differs.load(std::memory_order_relaxed); ++i)
      if (canonical_bits(t.data, t.type, i) != first) differs.store(true);
  });
  return !differs.load();
}

std::uint64_t value_hash(const host_tensor& t) noexcept {
  if (t.data == nullptr) return fnv_offset_basis;
  const std::size_t n = t.numel();
  if (n <= run_elements) return fnv1a(t, 0, n, fnv_offset_basis);
  // Each run's hash, then FNV-1a over those (little-endian bytes), in order; one run after
  // another in this thread where the runs' hashes cannot be held.
  std::vector<std::uint64_t> runs;
  try {
    runs.resize(runs_of(n));
    for_each_run(n, [&](std::size_t r, std::size_t begin, std::size_t end) {
      runs[r] = fnv1a(t, begin, end, fnv_offset_basis);
    });
  } catch (...) {
    runs.clear();
  }
  std::uint64_t h = fnv_offset_basis;
  for (std::size_t r = 0; r < runs_of(n); ++r) {
    const std::uint64_t v =
        r < runs.size()
            ? runs[r]
            : fnv1a(t, r * run_elements, std::min(n, (r + 1) * run_elements), fnv_offset_basis);
    h = fnv1a_bytes(h, v, 8);
  }
  return h;
}

namespace {

/** An element out of tolerance, as a run found it: the first few of each run are kept. */
struct rejected {
  std::size_t flat = 0;
  double expected = 0, actual = 0;
};

/** What one run of the floating comparison found; runs are combined in order (add). */
struct float_run {
  std::size_t mismatch_count = 0, nan_count = 0, inf_count = 0;
  std::size_t finite_pairs = 0, relative_pairs = 0;
  double abs_sum = 0, rel_sum = 0, max_abs = 0, max_rel = 0;
  double ref_sum = 0, ref_abs_sum = 0;
  double ref_min = std::numeric_limits<double>::infinity();
  double ref_max = -std::numeric_limits<double>::infinity();
  double ref_abs_max = 0;
  // The finite pair with the largest excess |a - e| - (atol + rtol |e|), passing or not (the
  // first such).
  double worst_excess = -std::numeric_limits<double>::infinity();
  std::size_t worst_flat = 0;
  double worst_expected = 0, worst_actual = 0;
  std::optional<std::size_t> first_nan, first_inf, first_non_finite;
  std::size_t finite_for_non_finite = 0;  ///< finite candidate where the reference is NaN/Inf
  std::optional<std::size_t> first_finite_for_non_finite;
  std::vector<rejected> rejects;  ///< the first max_mismatches out of tolerance

  void reserve(std::size_t max_mismatches) { rejects.reserve(max_mismatches); }

  /** This run followed by `r` (the next one). */
  void add(const float_run& r, std::size_t max_mismatches) {
    mismatch_count += r.mismatch_count;
    nan_count += r.nan_count;
    inf_count += r.inf_count;
    finite_pairs += r.finite_pairs;
    relative_pairs += r.relative_pairs;
    abs_sum += r.abs_sum;
    rel_sum += r.rel_sum;
    max_abs = std::max(max_abs, r.max_abs);
    max_rel = std::max(max_rel, r.max_rel);
    ref_sum += r.ref_sum;
    ref_abs_sum += r.ref_abs_sum;
    ref_min = std::min(ref_min, r.ref_min);
    ref_max = std::max(ref_max, r.ref_max);
    ref_abs_max = std::max(ref_abs_max, r.ref_abs_max);
    if (r.worst_excess > worst_excess) {
      worst_excess = r.worst_excess;
      worst_flat = r.worst_flat;
      worst_expected = r.worst_expected;
      worst_actual = r.worst_actual;
    }
    if (!first_nan) first_nan = r.first_nan;
    if (!first_inf) first_inf = r.first_inf;
    if (!first_non_finite) first_non_finite = r.first_non_finite;
    finite_for_non_finite += r.finite_for_non_finite;
    if (!first_finite_for_non_finite) first_finite_for_non_finite = r.first_finite_for_non_finite;
    for (const auto& x : r.rejects) {
      if (rejects.size() >= max_mismatches) break;
      rejects.push_back(x);
    }
  }
};

/** Elements [begin, end) of the floating comparison into `run`; load(data, i) reads element i
 *  as a double. */
template <class Load>
void scan_floats(const host_tensor& expected, const host_tensor& actual, double atol, double rtol,
                 std::size_t max_mismatches, std::size_t begin, std::size_t end, float_run& run,
                 const Load& load) {
  const auto reject = [&](std::size_t i, double e, double a) {
    ++run.mismatch_count;
    if (run.rejects.size() < max_mismatches) run.rejects.push_back({i, e, a});
  };
  for (std::size_t i = begin; i < end; ++i) {
    const double e = load(expected.data, i);
    const double a = load(actual.data, i);
    if (std::isfinite(e)) {
      run.ref_min = std::min(run.ref_min, e);
      run.ref_max = std::max(run.ref_max, e);
      run.ref_abs_max = std::max(run.ref_abs_max, std::abs(e));
      run.ref_sum += e;
      run.ref_abs_sum += std::abs(e);
    }
    if (std::isfinite(e) && std::isfinite(a)) {
      const double err = std::abs(a - e);
      ++run.finite_pairs;
      run.abs_sum += err;
      run.max_abs = std::max(run.max_abs, err);
      if (e != 0) {
        const double rel = err / std::abs(e);
        ++run.relative_pairs;
        run.rel_sum += rel;
        run.max_rel = std::max(run.max_rel, rel);
      }
      const double allowed = atol + rtol * std::abs(e);
      if (err - allowed > run.worst_excess) {
        run.worst_excess = err - allowed;
        run.worst_flat = i;
        run.worst_expected = e;
        run.worst_actual = a;
      }
      if (!(err <= allowed)) reject(i, e, a);
      continue;
    }
    // At least one side is NaN or Inf: equal_nan semantics, same-signed Inf matches.
    const bool same = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e);
    if (same) continue;
    if (std::isnan(a)) {
      ++run.nan_count;
      if (!run.first_nan) run.first_nan = i;
    }
    if (std::isinf(a)) {
      ++run.inf_count;
      if (!run.first_inf) run.first_inf = i;
    }
    if (std::isfinite(a)) {
      ++run.finite_for_non_finite;
      if (!run.first_finite_for_non_finite) run.first_finite_for_non_finite = i;
    }
    if (!run.first_non_finite) run.first_non_finite = i;
    reject(i, e, a);
  }
}

/** fn(run r, begin, end) into one T per run of n elements (for_each_run), the runs then added in
 *  order. Each run's vectors are reserved before the threads start (they must not throw). */
template <class T, class F>
T scan_runs(std::size_t n, std::size_t max_mismatches, const F& fn) {
  std::vector<T> runs(runs_of(n));
  for (auto& r : runs) r.reserve(max_mismatches);
  for_each_run(n,
               [&](std::size_t r, std::size_t begin, std::size_t end) { fn(begin, end, runs[r]); });
  T all;
  for (const auto& r : runs) all.add(r, max_mismatches);
  return all;
}

void compare_values(const host_tensor& expected, const host_tensor& actual,
                    std::size_t max_mismatches, output_comparison& out) {
  const double atol = out.tol.atol;
  const double rtol = out.tol.rtol;
  const auto acc = scan_runs<float_run>(
      out.numel, max_mismatches, [&](std::size_t begin, std::size_t end, float_run& run) {
        // float32, the common case, read inline (through load_as_double's switch it took 3x as
        // long); both sides have the same dtype here
        if (expected.type == dtype::f32) {
          scan_floats(expected, actual, atol, rtol, max_mismatches, begin, end, run,
                      [](const void* d, std::size_t i) {
                        float v;
                        std::memcpy(&v, static_cast<const char*>(d) + i * sizeof v, sizeof v);
                        return static_cast<double>(v);
                      });
        } else {
          scan_floats(expected, actual, atol, rtol, max_mismatches, begin, end, run,
                      [t = expected.type](const void* d, std::size_t i) {
                        return load_as_double(d, t, i);
                      });
        }
      });
  out.mismatch_count = acc.mismatch_count;
  out.nan_count = acc.nan_count;
  out.inf_count = acc.inf_count;
  out.max_abs_err = acc.max_abs;
  out.max_rel_err = acc.max_rel;
  out.reference_sum = acc.ref_sum;
  out.reference_abs_sum = acc.ref_abs_sum;
  for (const auto& r : acc.rejects)
    out.mismatches.push_back({unravel(r.flat, actual.shape),
                              r.expected,
                              r.actual,
                              std::abs(r.actual - r.expected),
                              {},
                              {}});
  // Beyond rounding: more than rtol of the largest magnitude, and more than a hundredth of atol
  // (values that are zero but for rounding, as a mean of centred rows, vary by nothing that
  // counts, however small their largest magnitude).
  out.reference_varies = acc.ref_max > acc.ref_min &&
                         acc.ref_max - acc.ref_min > std::max(rtol * acc.ref_abs_max, 0.01 * atol);
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
  if (out.constant_output) {
    // fmt writes a NaN whose sign bit is set (x / 0 * 0 makes one) "-nan"
    const double v = load_as_double(actual.data, actual.type, 0);
    parts.push_back(std::isnan(v) ? std::string("every output element is nan")
                                  : fmt::format("every output element is {:.6g}", v));
  }
  out.message = fmt::format("{}", fmt::join(parts, "; "));
}

/** What one run of the integer comparison found; runs are combined in order (add). */
struct integer_run {
  double abs_sum = 0, rel_sum = 0, max_abs = 0, max_rel = 0;
  std::size_t relative_pairs = 0, mismatch_count = 0;
  std::optional<std::size_t> worst;  ///< the first mismatch with the largest difference
  std::int64_t worst_e = 0, worst_a = 0;
  std::vector<rejected> rejects;  ///< the first max_mismatches (values as int64 in `texts`)
  std::vector<std::pair<std::int64_t, std::int64_t>> texts;

  void reserve(std::size_t max_mismatches) {
    rejects.reserve(max_mismatches);
    texts.reserve(max_mismatches);
  }

  void add(const integer_run& r, std::size_t max_mismatches) {
    abs_sum += r.abs_sum;
    rel_sum += r.rel_sum;
    max_rel = std::max(max_rel, r.max_rel);
    relative_pairs += r.relative_pairs;
    mismatch_count += r.mismatch_count;
    if (r.worst && (!worst || r.max_abs > max_abs)) {
      worst = r.worst;
      worst_e = r.worst_e;
      worst_a = r.worst_a;
    }
    max_abs = std::max(max_abs, r.max_abs);
    for (std::size_t k = 0; k < r.rejects.size() && rejects.size() < max_mismatches; ++k) {
      rejects.push_back(r.rejects[k]);
      texts.push_back(r.texts[k]);
    }
  }
};

/** Integer and bool outputs: every element must be equal, exactly (int64 values beyond 2^53
 *  included, which doubles would round together). The error statistics are those of the float
 *  path, from exact differences. */
void compare_integers(const host_tensor& expected, const host_tensor& actual,
                      std::size_t max_mismatches, output_comparison& out) {
  const auto acc = scan_runs<integer_run>(
      out.numel, max_mismatches, [&](std::size_t begin, std::size_t end, integer_run& run) {
        for (std::size_t i = begin; i < end; ++i) {
          const std::int64_t e = load_as_int64(expected.data, expected.type, i);
          const std::int64_t a = load_as_int64(actual.data, actual.type, i);
          const long double diff = static_cast<long double>(a) - static_cast<long double>(e);
          const double err = static_cast<double>(diff < 0 ? -diff : diff);
          run.abs_sum += err;
          if (e != 0) {
            const double rel = err / std::abs(static_cast<double>(e));
            ++run.relative_pairs;
            run.rel_sum += rel;
            run.max_rel = std::max(run.max_rel, rel);
          }
          if (a == e) continue;
          if (!run.worst || err > run.max_abs) {
            run.worst = i;
            run.worst_e = e;
            run.worst_a = a;
          }
          run.max_abs = std::max(run.max_abs, err);
          ++run.mismatch_count;
          if (run.rejects.size() < max_mismatches) {
            run.rejects.push_back({i, static_cast<double>(e), static_cast<double>(a)});
            run.texts.emplace_back(e, a);
          }
        }
      });
  out.max_abs_err = acc.max_abs;
  out.max_rel_err = acc.max_rel;
  out.mismatch_count = acc.mismatch_count;
  for (std::size_t k = 0; k < acc.rejects.size(); ++k) {
    const auto& r = acc.rejects[k];
    out.mismatches.push_back(
        {unravel(r.flat, actual.shape), r.expected, r.actual, std::abs(r.actual - r.expected),
         fmt::format("{}", acc.texts[k].first), fmt::format("{}", acc.texts[k].second)});
  }
  out.abs_err_count = out.numel;
  out.rel_err_count = acc.relative_pairs;
  if (out.numel > 0) out.mean_abs_err = acc.abs_sum / static_cast<double>(out.numel);
  if (acc.relative_pairs > 0)
    out.mean_rel_err = acc.rel_sum / static_cast<double>(acc.relative_pairs);
  // As the float path: the worst mismatch, else (all equal) the first element; none when empty.
  if (out.numel > 0) out.worst_index = unravel(acc.worst.value_or(0), actual.shape);
  out.passed = out.mismatch_count == 0;
  if (out.passed) return;
  out.message = fmt::format(
      "{} of {} elements differ ({} compares exactly; max abs err {:.6g}; worst at {}: expected "
      "{}, got {})",
      out.mismatch_count, out.numel, to_string(expected.type), out.max_abs_err,
      shape_string(out.worst_index), acc.worst_e, acc.worst_a);
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
  KJ_EXPECTS(actual.reached == 0 || actual.shape != expected.shape || actual.type != expected.type);
  output_comparison out;
  out.expected_shape = expected.shape;
  out.actual_shape = actual.shape;
  out.expected_dtype = expected.type;
  out.actual_dtype = actual.type;
  out.tol = tol;
  out.numel = expected.numel();
  out.shape_ok = expected.shape == actual.shape;
  out.dtype_ok = expected.type == actual.type;
  if (actual.reached == 0) {
    out.actual_hash = value_hash(actual);
    out.constant_output = is_constant(actual);
  } else {
    // The elements reached stand for the values: every one of them is some index's in an
    // expansion (a stride-0 dimension over a dense tensor); with gaps between the reached
    // ones (other overlaps), a constant output can read as varying, never the reverse, and
    // the gaps' bytes count in the hash.
    const host_tensor reached{
        actual.type, {static_cast<std::int64_t>(actual.reached)}, actual.data};
    // With its shape: different expansions of one element are different outputs.
    out.actual_hash = value_hash(reached);
    for (const auto d : actual.shape)
      out.actual_hash = fnv1a_bytes(out.actual_hash, static_cast<std::uint64_t>(d), 8);
    out.constant_output = actual.numel() > 1 && (actual.reached == 1 || is_constant(reached));
  }

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
