#include <kjudge/core/timestamp.hpp>

#include <ctime>

namespace kj {

std::string utc_now() {
  return utc_time(std::time(nullptr));
}

std::string utc_time(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(text, n);
}

}  // namespace kj
