#include <kjudge/core/file_io.hpp>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>

namespace kj {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    KJ_THROW(error_kind::io, "cannot read {}: {}", path.string(),
             std::error_code(errno, std::generic_category()).message());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) KJ_THROW(error_kind::io, "cannot read {}: read error", path.string());
  return std::move(buffer).str();
}

temp_dir::temp_dir(std::string_view prefix) {
  std::string tmpl = (fs::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    KJ_THROW(error_kind::io, "cannot create a temporary folder {}: {}", tmpl,
             std::error_code(errno, std::generic_category()).message());
  m_path = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

std::string unique_temp_suffix() {
  static std::atomic<unsigned> counter{0};
  return fmt::format("tmp.{}.{}.{}", ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()),
                     counter.fetch_add(1));
}

void write_file_atomic(const fs::path& path, std::string_view text) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec)
    KJ_THROW(error_kind::io, "cannot create {}: {}", path.parent_path().string(), ec.message());
  const fs::path tmp = path.string() + "." + unique_temp_suffix();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      KJ_THROW(error_kind::io, "cannot write {}", tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    KJ_THROW(error_kind::io, "cannot move {} to {}: {}", tmp.string(), path.string(), why);
  }
}

void write_output(const fs::path& path, std::string_view text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  write_file_atomic(path, text);
}

}  // namespace kj
