// How long kjudge's output comparison takes on a large float32 output (125 M elements, 500 MB,
// by default), and its parts: compare() (which hashes the candidate's output and checks whether
// it is constant), value_hash() and is_constant() alone. Built and run by compare_speed.sh.
#include <kjudge/check/compare.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoull(argv[1]) : 125'000'000;
  std::vector<float> expected(n), actual(n);
  std::mt19937 g(1);
  for (std::size_t i = 0; i < n; ++i) {
    expected[i] = static_cast<float>(g() % 1000) / 1000.f;
    actual[i] = expected[i] + 1e-6f;
  }
  const auto shape = std::vector<std::int64_t>{static_cast<std::int64_t>(n)};
  const kj::check::host_tensor e{kj::dtype::f32, shape, expected.data()};
  const kj::check::host_tensor a{kj::dtype::f32, shape, actual.data()};
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = kj::check::compare(e, a, {1e-4, 1e-4});
    const auto t1 = std::chrono::steady_clock::now();
    const auto h = kj::check::value_hash(a);
    const auto t2 = std::chrono::steady_clock::now();
    const bool constant = kj::check::is_constant(a);
    const auto t3 = std::chrono::steady_clock::now();
    std::printf(
        "n=%zu threads=%u compare %.1f ms (passed %d) value_hash %.1f ms (%s) "
        "is_constant %.1f ms (%d)\n",
        n, std::thread::hardware_concurrency(), ms(t1 - t0), r.passed ? 1 : 0, ms(t2 - t1),
        h == r.actual_hash ? "same" : "DIFFERS", ms(t3 - t2), constant ? 1 : 0);
  }
}
