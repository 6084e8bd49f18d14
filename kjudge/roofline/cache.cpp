#include <kjudge/roofline/cache.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>

namespace kj::roofline {

namespace fs = std::filesystem;

fs::path cache_path(const fs::path& cache_root, std::string_view uuid, int driver_version) {
  if (uuid.empty()) KJ_THROW(error_kind::usage, "no GPU UUID: cannot name the roofline cache");
  std::string key;
  for (char c : uuid) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    key += ok ? c : '_';
  }
  if (key.find_first_not_of('.') == std::string::npos) key = "_";  // never "." or ".."
  return cache_root / "roofline" / (key + "-" + std::to_string(driver_version) + ".json");
}

roofline_result read_result(const fs::path& path) {
  const auto j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) KJ_THROW(error_kind::protocol, "{} is not JSON", path.string());
  roofline_result r;
  try {
    from_json(j, r);
  } catch (const error& e) {
    KJ_THROW(error_kind::protocol, "{}: {}", path.string(), e.message());
  }
  return r;
}

std::optional<roofline_result> load_cached(const fs::path& path, std::string_view uuid,
                                           int driver_version, std::string* why) {
  auto say = [why](std::string text) {
    if (why != nullptr) *why = std::move(text);
  };
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    say("no cached result at " + path.string());
    return std::nullopt;
  }
  try {
    auto r = read_result(path);
    if (r.gpu.uuid != uuid || r.gpu.driver_version != driver_version) {
      say("the cached result at " + path.string() + " is for another GPU or driver");
      return std::nullopt;
    }
    if (const auto absent = absent_benchmarks(r); !absent.empty()) {
      say(
          fmt::format("the cached result at {} was written by an older kjudge: it has no {} "
                      "figure",
                      path.string(), fmt::join(absent, ", ")));
      return std::nullopt;
    }
    return r;
  } catch (const error& e) {
    say("the cached result is unusable: " + e.message());
    return std::nullopt;
  }
}

}  // namespace kj::roofline
