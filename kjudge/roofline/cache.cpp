#include <kjudge/roofline/cache.hpp>

#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include <kjudge/core/error.hpp>

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
  std::ifstream in(path, std::ios::binary);
  if (!in) KJ_THROW(error_kind::io, "cannot read {}", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
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
    return r;
  } catch (const error& e) {
    say("the cached result is unusable: " + e.message());
    return std::nullopt;
  }
}

void write_file_atomic(const fs::path& path, std::string_view text) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec)
    KJ_THROW(error_kind::io, "cannot create {}: {}", path.parent_path().string(), ec.message());
  // The process id keeps two concurrent writers (two `kjudge roofline --refresh`) apart.
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) KJ_THROW(error_kind::io, "cannot write {}", tmp.string());
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) KJ_THROW(error_kind::io, "writing {} failed", tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    KJ_THROW(error_kind::io, "cannot move {} to {}", tmp.string(), path.string());
  }
}

}  // namespace kj::roofline
