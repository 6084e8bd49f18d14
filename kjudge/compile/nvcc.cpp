// build_native: one candidate .cu -> a cached shared library, built by nvcc in a child process.
#include <kjudge/compile/nvcc.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/runner/process.hpp>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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
constexpr std::string_view k_cache_version = "kjudge-native-cache-v2";
/** Environment variables that nvcc or its host compiler read: they change what a build makes. */
constexpr std::array<const char*, 6> k_build_env = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS",
                                                    "NVCC_CCBIN",         "CPATH",
                                                    "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH"};

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
 *  vary between machines and checkouts) go into the cache key. `--no-undefined`: a symbol that
 *  nothing provides fails the link, with the linker's message, not the dlopen later. */
[[nodiscard]] std::vector<std::string> base_flags(const std::string& arch) {
  return {"-O3",      "-std=c++17",
          "-shared",  "-Xcompiler",
          "-fPIC",    "-lineinfo",
          "-Xlinker", "--no-undefined",
          "-gencode", fmt::format("arch=compute_{0},code=sm_{0}", arch)};
}

/** kjudge's flags, the include folder and the extra flags: what every nvcc run of a request
 *  shares (the build, the dependency scan, the canary). */
[[nodiscard]] std::vector<std::string> shared_args(const fs::path& nvcc,
                                                   const nvcc_request& request) {
  std::vector<std::string> command{nvcc.empty() ? std::string("nvcc") : nvcc.string()};
  for (auto& flag : base_flags(request.arch)) command.push_back(std::move(flag));
  if (!request.include_dir.empty()) command.push_back("-I" + request.include_dir.string());
  command.insert(command.end(), request.extra_flags.begin(), request.extra_flags.end());
  return command;
}

/** The command that builds `source` into `dir`/candidate.so. */
[[nodiscard]] std::vector<std::string> make_command(const fs::path& nvcc,
                                                    const nvcc_request& request,
                                                    const fs::path& source, const fs::path& dir) {
  std::vector<std::string> command = shared_args(nvcc, request);
  command.push_back(source.string());
  command.push_back("-o");
  command.push_back((dir / "candidate.so").string());
  return command;
}

/** One field of the key, length-prefixed so that no two field lists hash the same bytes. */
void hash_field(sha256& hash, std::string_view bytes) {
  hash.update(fmt::format("{}:", bytes.size()));
  hash.update(bytes);
}

/** The key of everything known before nvcc runs: the source's bytes, the flags, which nvcc and
 *  its release, the ABI header, the build environment, and (with extra flags, whose relative
 *  paths resolve there) the working folder. The headers the source includes are checked after:
 *  see dependency. */
[[nodiscard]] std::string cache_key(const nvcc_request& request, const fs::path& nvcc,
                                    std::string_view source, std::string_view version,
                                    std::string_view abi_header) {
  sha256 hash;
  hash_field(hash, k_cache_version);
  hash_field(hash, source);
  for (const auto& flag : base_flags(request.arch)) hash_field(hash, flag);
  hash_field(hash, "extra");
  for (const auto& flag : request.extra_flags) hash_field(hash, flag);
  hash_field(hash, version);
  hash_field(hash, abi_header);
  std::error_code ec;
  const fs::path nvcc_real = fs::weakly_canonical(nvcc, ec);
  hash_field(hash, ec ? nvcc.string() : nvcc_real.string());
  for (const char* name : k_build_env) {
    const char* value = std::getenv(name);
    hash_field(hash, value == nullptr ? std::string_view("<unset>") : std::string_view(value));
  }
  if (!request.extra_flags.empty()) hash_field(hash, fs::current_path(ec).string());
  return hash.hex();
}

/** The prerequisites of a make rule as nvcc -M writes it ("target : a b", lines continued by
 *  a backslash, spaces in names escaped with one). */
[[nodiscard]] std::vector<std::string> parse_depfile(std::string_view text) {
  std::vector<std::string> out;
  const std::size_t colon = text.find(": ");
  if (colon == std::string_view::npos) return out;
  std::string word;
  for (std::size_t i = colon + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;  // a line continuation
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

/** Every file the source includes, as nvcc resolves them with these flags and this environment
 *  (`nvcc -M`: search order, symbolic links, `__has_include`, system and toolkit headers
 *  alike), in nvcc's order, with a SHA-256 of each. Empty with `why` when the scan fails (a
 *  missing header: the build then says why) or a file cannot be read. */
struct dependency {
  std::string path;
  std::string sha256;
};

[[nodiscard]] std::vector<dependency> scan_dependencies(const fs::path& nvcc,
                                                        const nvcc_request& request,
                                                        std::chrono::milliseconds timeout,
                                                        std::string& why) {
  runner::spawn_options options;
  options.argv = shared_args(nvcc, request);
  options.argv.push_back("-M");
  options.argv.push_back(request.source.string());
  options.timeout = timeout;
  options.output_tail_bytes = k_log_limit;
  const runner::process_result run = runner::run_process(options);
  if (!run.ok()) {
    why = "nvcc -M " + run.describe();
    return {};
  }
  std::vector<dependency> out;
  for (std::string& name : parse_depfile(run.output_tail)) {
    dependency d;
    try {
      d.sha256 = kj::sha256_file(name);
    } catch (const kj::error& e) {
      why = e.message();
      return {};
    }
    d.path = std::move(name);
    out.push_back(std::move(d));
  }
  if (out.empty()) why = "nvcc -M listed no files";
  return out;
}

/** True when every file still has the bytes it had at the scan. */
[[nodiscard]] bool unchanged(const std::vector<dependency>& deps) {
  for (const auto& d : deps) {
    try {
      if (kj::sha256_file(d.path) != d.sha256) return false;
    } catch (const kj::error&) {
      return false;
    }
  }
  return true;
}

/** The folder of one build under a key: named by the bytes of the files nvcc resolves, in its
 *  order (not their paths: the same headers in another checkout share the build; another header
 *  found first, or an edited one, makes another build). */
[[nodiscard]] std::string variant_name(const std::vector<dependency>& deps) {
  sha256 hash;
  for (const auto& d : deps) hash_field(hash, d.sha256);
  return hash.hex().substr(0, 16);
}

[[nodiscard]] nlohmann::json to_json(const std::vector<dependency>& deps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : deps) out.push_back({{"path", d.path}, {"sha256", d.sha256}});
  return out;
}

/** One build of an empty source with the request's flags and environment into `dir`. */
[[nodiscard]] bool build_canary(const fs::path& nvcc, const nvcc_request& request,
                                const fs::path& dir, std::string& why) {
  const fs::path source = dir / "canary.cu";
  if (!write_file_atomic(dir, "canary.cu", "extern \"C\" int kj_canary() { return 0; }\n", why))
    return false;
  runner::spawn_options options;
  options.argv = shared_args(nvcc, request);
  options.argv.insert(options.argv.end(), {source.string(), "-o", (dir / "canary.so").string()});
  options.timeout = std::chrono::minutes(2);
  options.output_tail_bytes = 64 * 1024;
  const runner::process_result run = runner::run_process(options);
  if (!run.ok()) why = fmt::format("{}\n{}", run.describe(), run.output_tail);
  return run.ok();
}

/** Whether nvcc itself can build an empty source with the request's flags and environment; when
 *  not, a failed build is the tool's (a broken host compiler, an architecture the toolkit does
 *  not know, a full disk, bad flags), not the candidate's. `why`: the canary's output. */
[[nodiscard]] bool nvcc_builds_a_canary(const fs::path& nvcc, const nvcc_request& request,
                                        const fs::path& dir, std::string& why) {
  // Remembered per command line and environment for the life of the process.
  static std::mutex mutex;
  static std::map<std::string, std::pair<bool, std::string>> known;
  std::string id;
  for (const auto& a : shared_args(nvcc, request)) id += a + '\n';
  for (const char* name : k_build_env) id += env_or_empty(name) + '\n';
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(id); it != known.end()) {
      why = it->second.second;
      return it->second.first;
    }
  }
  const bool ok = build_canary(nvcc, request, dir, why);
  std::lock_guard lock(mutex);
  known.emplace(id, std::pair{ok, why});
  return ok;
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
  out.failure = build_failure::tool;  // until nvcc has run (or the cache has answered)
  const fs::path nvcc = request.nvcc.empty() ? find_nvcc() : request.nvcc;
  const fs::path cache_dir =
      request.cache_dir.empty() ? default_cache_dir() / "native" : request.cache_dir;
  out.command = make_command(nvcc, request, request.source, cache_dir / "<key>" / "<build>");

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

  out.key = cache_key(request, nvcc, source, out.nvcc_version, abi_header);
  const fs::path entry = cache_dir / out.key;
  // What this build would include, now: the build under the key made from those same bytes
  // serves. A scan that fails skips the cache (the build says what is wrong).
  std::string scan_error;
  const std::vector<dependency> deps =
      scan_dependencies(nvcc, request, request.timeout, scan_error);
  const std::string variant = deps.empty() ? std::string() : variant_name(deps);

  std::error_code ec;
  if (!variant.empty() && fs::is_regular_file(entry / variant / "candidate.so", ec)) {
    // build.log and build.json are renamed into place with the library, so a hit has them.
    const fs::path hit = entry / variant;
    out.library = hit / "candidate.so";
    out.command = make_command(nvcc, request, request.source, hit);
    std::string log;
    if (read_file(hit / "build.log", log, why)) out.log = std::move(log);
    out.ok = true;
    out.cached = true;
    out.failure = build_failure::none;
    out.build_time = since(start);
    return out;
  }

  // The whole build happens in a folder of its own, renamed into place once complete. A build
  // that is killed leaves its `.build.*` folder; nothing else uses it, and it may be deleted.
  const fs::path work = entry / (".build." + kj::unique_temp_suffix());
  fs::create_directories(work, ec);
  if (ec) {
    out.error = fmt::format("cannot create build directory {}: {}", work.string(), ec.message());
    return out;
  }
  auto fail = [&](build_failure kind, std::string message) {
    out.failure = kind;
    out.error = std::move(message);
    fs::remove_all(work, ec);
    fs::remove(entry, ec);  // only if empty: no other build of this key
    return out;
  };
  runner::spawn_options options;
  options.argv = make_command(nvcc, request, request.source, work);
  out.command = options.argv;
  options.timeout = request.timeout;
  options.output_tail_bytes = k_log_limit;
  const runner::process_result run = runner::run_process(options);
  out.log = run.output_tail;
  if (run.output_bytes > run.output_tail.size())
    out.log.insert(0, fmt::format("[kjudge: the first {} bytes of compiler output were dropped]\n",
                                  run.output_bytes - run.output_tail.size()));
  out.build_time = since(start);

  // nvcc that ran to the end and said no has rejected the source, unless it cannot build even
  // an empty one with these flags and this environment; anything else (a signal, the time
  // limit, a spawn failure) is the tool's failure, not the candidate's.
  if (!run.ok()) {
    std::string canary_why;
    if (run.how != runner::exit_kind::exited ||
        out.log.find("died due to signal") != std::string::npos)
      return fail(build_failure::tool, "nvcc " + run.describe());
    if (!nvcc_builds_a_canary(nvcc, request, work, canary_why))
      return fail(build_failure::tool,
                  fmt::format("nvcc {}, and fails on an empty source with the same flags and "
                              "environment too (not the candidate's fault): {}",
                              run.describe(), canary_why));
    return fail(build_failure::rejected, "nvcc " + run.describe());
  }
  if (!fs::is_regular_file(work / "candidate.so", ec))
    return fail(build_failure::tool, "nvcc succeeded but wrote no library");
  out.ok = true;
  out.failure = build_failure::none;
  out.library = work / "candidate.so";
  // Published only when the files it included were scanned and did not change while nvcc ran
  // (an edit during the build would file a library of the old bytes under the new ones). An
  // unpublished build serves this evaluation from its own folder and is not kept for others.
  if (variant.empty() || !unchanged(deps)) {
    out.log += fmt::format("[kjudge: this build was not cached: {}]\n",
                           variant.empty() ? "its includes could not be listed (" + scan_error + ")"
                                           : std::string("an included file changed during it"));
    return out;
  }
  const fs::path final_dir = entry / variant;
  out.command = make_command(nvcc, request, request.source, final_dir);
  const nlohmann::json info = {
      {"command", out.command},
      {"nvcc", nvcc.string()},
      {"nvcc_version", out.nvcc_version},
      {"arch", request.arch},
      {"source", request.source.string()},
      {"dependencies", to_json(deps)},
      {"build_seconds", out.build_time.count()},
      {"key", out.key},
  };
  if (!write_file_atomic(work, "build.log", out.log, why) ||
      !write_file_atomic(work, "build.json", info.dump(2) + "\n", why))
    return fail(build_failure::tool, why);
  fs::rename(work, final_dir, ec);
  if (ec) {
    // Another build of the same key and bytes finished first (the target folder exists and is
    // not empty): the same bytes, so its library serves.
    if (!fs::is_regular_file(final_dir / "candidate.so"))
      return fail(build_failure::tool, fmt::format("cannot move the build into {}: {}",
                                                   final_dir.string(), ec.message()));
    fs::remove_all(work, ec);
  }
  out.library = final_dir / "candidate.so";
  return out;
}

}  // namespace kj::compile
