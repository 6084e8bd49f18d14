#include <kjudge/eval/stress_size.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <kjudge/core/dtype.hpp>

namespace kj::eval {

double stress_input_bytes(const std::vector<std::vector<std::int64_t>>& shapes,
                          const std::vector<std::string>& dtypes,
                          const std::map<std::string, std::int64_t>& jitter,
                          const std::vector<std::int64_t>& pinned, std::int64_t scale) {
  std::set<std::int64_t> scaled;
  for (const auto& [nominal, drawn] : jitter) {
    try {
      const long long n = std::stoll(nominal);
      if (n >= 7 && std::find(pinned.begin(), pinned.end(), n) == pinned.end())
        scaled.insert(drawn);
    } catch (const std::exception&) {
      // not a size of ours
    }
  }
  const double factor = static_cast<double>(std::max<std::int64_t>(1, scale));
  double total = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = i < dtypes.size() ? dtypes[i] : std::string();
    const auto type = dtype_from_string(name);  // (a Python number: shape [], a few bytes)
    double bytes = static_cast<double>(type ? element_size(*type) : 8);
    for (const std::int64_t d : shapes[i])
      bytes *= static_cast<double>(std::max<std::int64_t>(d, 0)) * (scaled.count(d) ? factor : 1);
    total += bytes;
  }
  return total;
}

std::optional<double> host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    double kib = 0;
    if (fields >> kib) return kib * 1024.0;
  }
  return std::nullopt;
}

}  // namespace kj::eval
