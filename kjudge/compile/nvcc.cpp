// build_native: one candidate .cu -> a cached shared library, built by nvcc in a child process.
#include <kjudge/compile/nvcc.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/runner/process.hpp>

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kj::compile {
namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

/** Large enough that no real compiler log is cut; the runner never holds more than twice this. */
constexpr std::size_t k_log_limit = std::size_t{16} << 20;
/** Bumped when the layout of the cache or the meaning of a key changes. */
constexpr std::string_view k_cache_version = "kjudge-native-cache-v1";

[[nodiscard]] std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

/** kj::read_file that reports failure through `why` (a missing cache entry is not an error). */
[[nodiscard]] bool read_file(const fs::path& path, std::string& out, std::string& why) {
  try {
    out = kj::read_file(path);
    return true;
  } catch (const kj::error& e) {
    why = e.message();
    return false;
  }
}

/** kj::write_file_atomic of dir/name, reporting failure through `why`. */
[[nodiscard]] bool write_file_atomic(const fs::path& dir, const std::string& name,
                                     std::string_view content, std::string& why) {
  try {
    kj::write_file_atomic(dir / name, content);
    return true;
  } catch (const kj::error& e) {
    why = e.message();
    return false;
  }
}

/** "90", "90a", "100f": digits, then at most one lowercase letter. */
[[nodiscard]] bool valid_arch(std::string_view arch) {
  std::size_t digits = 0;
  while (digits < arch.size() && arch[digits] >= '0' && arch[digits] <= '9') ++digits;
  if (digits == 0) return false;
  const std::size_t rest = arch.size() - digits;
  return rest == 0 || (rest == 1 && arch.back() >= 'a' && arch.back() <= 'z');
}

/** kjudge's own flags; they and extra_flags (but not the include, source and output paths, which
 *  vary between machines and checkouts) go into the cache key. */
[[nodiscard]] std::vector<std::string> base_flags(const std::string& arch) {
  return {"-O3",   "-std=c++17", "-shared",  "-Xcompiler",
          "-fPIC", "-lineinfo",  "-gencode", fmt::format("arch=compute_{0},code=sm_{0}", arch)};
}

[[nodiscard]] std::vector<std::string> make_command(const fs::path& nvcc,
                                                    const nvcc_request& request,
                                                    const fs::path& output) {
  std::vector<std::string> command{nvcc.empty() ? std::string("nvcc") : nvcc.string()};
  for (auto& flag : base_flags(request.arch)) command.push_back(std::move(flag));
  if (!request.include_dir.empty()) command.push_back("-I" + request.include_dir.string());
  command.insert(command.end(), request.extra_flags.begin(), request.extra_flags.end());
  command.push_back(request.source.string());
  command.push_back("-o");
  command.push_back(output.string());
  return command;
}

/** One field of the key, length-prefixed so that no two field lists hash the same bytes. */
void hash_field(sha256& hash, std::string_view bytes) {
  hash.update(fmt::format("{}:", bytes.size()));
  hash.update(bytes);
}

[[nodiscard]] std::string cache_key(const nvcc_request& request, std::string_view source,
                                    std::string_view version, std::string_view abi_header) {
  sha256 hash;
  hash_field(hash, k_cache_version);
  hash_field(hash, source);
  for (const auto& flag : base_flags(request.arch)) hash_field(hash, flag);
  hash_field(hash, "extra");
  for (const auto& flag : request.extra_flags) hash_field(hash, flag);
  hash_field(hash, version);
  hash_field(hash, abi_header);
  return hash.hex();
}

/** Parses "Cuda compilation tools, release 13.0, V13.0.88" into "13.0.88" (or "13.0"). */
[[nodiscard]] std::string parse_version(const std::string& text) {
  const std::size_t release = text.find("release ");
  if (release == std::string::npos) return {};
  const std::size_t v = text.find(", V", release);
  const std::size_t begin = v != std::string::npos ? v + 3 : release + 8;
  std::size_t end = begin;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.'))
    ++end;
  return text.substr(begin, end - begin);
}

/** nvcc --version, remembered per path for the life of the process. Empty with `why` on failure. */
[[nodiscard]] std::string query_version(const fs::path& nvcc, std::string& why) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(nvcc.string()); it != known.end()) return it->second;
  }
  runner::spawn_options options;
  options.argv = {nvcc.string(), "--version"};
  options.timeout = std::chrono::minutes(1);
  const runner::process_result run = runner::run_process(options);
  if (!run.ok()) {
    why = fmt::format("cannot run {} --version: {}", nvcc.string(), run.describe());
    return {};
  }
  std::string version = parse_version(run.output_tail);
  if (version.empty()) {
    why = fmt::format("cannot find a release number in the output of {} --version", nvcc.string());
    return {};
  }
  std::lock_guard lock(mutex);
  known.emplace(nvcc.string(), version);
  return version;
}

[[nodiscard]] std::chrono::duration<double> since(steady::time_point start) {
  return steady::now() - start;
}

}  // namespace

fs::path find_nvcc() {
  if (std::string explicit_path = env_or_empty("KJUDGE_NVCC"); !explicit_path.empty())
    return explicit_path;  // the user's explicit choice; if it is wrong the build says so
  if (std::string cuda_home = env_or_empty("CUDA_HOME"); !cuda_home.empty()) {
    fs::path candidate = fs::path(cuda_home) / "bin" / "nvcc";
    if (runner::is_executable_file(candidate)) return candidate;
  }
  if (fs::path on_path = runner::find_on_path("nvcc"); !on_path.empty()) return on_path;
  if (fs::path configured = KJ_NVCC_PATH; runner::is_executable_file(configured)) return configured;
  return {};
}

std::string nvcc_version(const fs::path& nvcc) {
  std::string why;
  return query_version(nvcc, why);
}

fs::path default_cache_dir() {
  if (std::string dir = env_or_empty("KJUDGE_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty())
    return fs::path(xdg) / "kjudge";
  std::string home = env_or_empty("HOME");
  if (home.empty()) {
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_dir != nullptr)
      home = found->pw_dir;
  }
  if (home.empty()) return fs::temp_directory_path() / "kjudge-cache";
  return fs::path(home) / ".cache" / "kjudge";
}

build_result build_native(const nvcc_request& request) {
  const auto start = steady::now();
  build_result out;
  const fs::path nvcc = request.nvcc.empty() ? find_nvcc() : request.nvcc;
  const fs::path cache_dir =
      request.cache_dir.empty() ? default_cache_dir() / "native" : request.cache_dir;
  out.command = make_command(nvcc, request, cache_dir / "<key>" / "candidate.so");

  if (!valid_arch(request.arch)) {
    out.error = fmt::format("invalid arch '{}': expected a compute capability such as 90 or 90a",
                            request.arch);
    return out;
  }
  std::string source;
  std::string why;
  if (!read_file(request.source, source, why)) {
    out.error = fmt::format("cannot read {}: {}", request.source.string(), why);
    return out;
  }
  if (nvcc.empty()) {
    out.error = "nvcc not found (set KJUDGE_NVCC or CUDA_HOME, or put nvcc on PATH)";
    return out;
  }
  out.nvcc_version = query_version(nvcc, why);
  if (out.nvcc_version.empty()) {
    out.error = why;
    return out;
  }
  std::string abi_header = "<none>";
  if (!request.include_dir.empty()) {
    std::string header;
    if (read_file(request.include_dir / "kjudge" / "candidate.h", header, why)) abi_header = header;
  }

  out.key = cache_key(request, source, out.nvcc_version, abi_header);
  const fs::path entry = cache_dir / out.key;
  out.library = entry / "candidate.so";
  // Reported with the final library path; nvcc itself writes to a temporary name beside it.
  out.command = make_command(nvcc, request, out.library);

  std::error_code ec;
  if (fs::is_regular_file(out.library, ec)) {
    // build.log is renamed into place before the library, so a hit always has it.
    std::string log;
    if (read_file(entry / "build.log", log, why)) out.log = std::move(log);
    out.ok = true;
    out.cached = true;
    out.build_time = since(start);
    return out;
  }

  fs::create_directories(entry, ec);
  if (ec) {
    out.error = fmt::format("cannot create cache directory {}: {}", entry.string(), ec.message());
    return out;
  }
  const fs::path tmp_library = entry / ("candidate.so." + kj::unique_temp_suffix());
  runner::spawn_options options;
  options.argv = make_command(nvcc, request, tmp_library);
  options.timeout = request.timeout;
  options.output_tail_bytes = k_log_limit;
  const runner::process_result run = runner::run_process(options);
  out.log = run.output_tail;
  if (run.output_bytes > run.output_tail.size())
    out.log.insert(0, fmt::format("[kjudge: the first {} bytes of compiler output were dropped]\n",
                                  run.output_bytes - run.output_tail.size()));
  out.build_time = since(start);

  auto fail = [&](std::string message) {
    out.error = std::move(message);
    fs::remove(tmp_library, ec);
    return out;
  };
  if (!run.ok()) return fail("nvcc " + run.describe());
  if (!fs::is_regular_file(tmp_library, ec)) return fail("nvcc succeeded but wrote no library");

  const nlohmann::json info = {
      {"command", out.command},
      {"nvcc", nvcc.string()},
      {"nvcc_version", out.nvcc_version},
      {"arch", request.arch},
      {"source", request.source.string()},
      {"build_seconds", out.build_time.count()},
      {"key", out.key},
  };
  if (!write_file_atomic(entry, "build.log", out.log, why) ||
      !write_file_atomic(entry, "build.json", info.dump(2) + "\n", why))
    return fail(why);
  fs::rename(tmp_library, out.library, ec);
  if (ec)
    return fail(
        fmt::format("cannot move the library into {}: {}", out.library.string(), ec.message()));
  out.ok = true;
  return out;
}

}  // namespace kj::compile
